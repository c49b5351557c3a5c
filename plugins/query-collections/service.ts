/**
 * What the query-collections plugin offers other plugins (REST endpoints): the saved queries of a
 * build, parsed once, and a way to say that their metadata refers to collections.
 */
import type { DocumentNode } from 'graphql';
import { token, type BuildResult, type Metadata } from '../../core/plugin.js';

/** A saved query of a build: its text and its document, parsed once per text. */
export interface SavedQuery {
  readonly collection: string;
  readonly name: string;
  readonly query: string;
  readonly document: DocumentNode;
}

/** The `query-collections` build step's output. */
export interface CollectionsBuild {
  /** Collection name -> query name -> saved query. */
  readonly queries: ReadonlyMap<string, ReadonlyMap<string, SavedQuery>>;
  /** The allow-list as keys of Note [Allow-list matching]: for every role, and per role. */
  readonly allowed: { readonly global: ReadonlySet<string>; readonly roles: ReadonlyMap<string, ReadonlySet<string>> };
}

/*
 * Note [Referrers of saved queries]
 * Other plugins' metadata refers to saved queries (a REST endpoint names a collection and a
 * query). Such a plugin registers a Referrer, and the collection operations ask it: dropping a
 * collection or a query that an object refers to is refused with a dependency-error naming the
 * objects (`cascade` takes a collection out of the allow-list, which is this plugin's own, but
 * never drops another plugin's objects), and renaming a collection lets the referrer rewrite its
 * references in the same metadata change.
 */
export interface Referrer {
  /** What the objects are, in messages (`REST endpoint`). */
  readonly label: string;
  /** The metadata sections the referrer keeps, which do not change the GraphQL schema (a change
   * there does not call for checking the saved queries again). */
  readonly sections?: readonly string[];
  /** The names of the objects that refer to `collection` (to its query `query`, when given). */
  dependents(md: Metadata, collection: string, query?: string): string[];
  /** The metadata with references to collection `from` made to `to`. */
  rename?(md: Metadata, from: string, to: string): Metadata;
}

export interface QueryCollectionsService {
  /** The build step whose output is a CollectionsBuild (declare it in `after`). */
  readonly step: string;
  /** The saved queries of a build (or of a build in progress, through its context). */
  of(build: Pick<BuildResult, 'outputs'> | { output<T>(step: string): T | undefined }): CollectionsBuild;
  /** Note [Referrers of saved queries]. */
  referrer(r: Referrer): void;
}

export const QueryCollectionsToken = token<QueryCollectionsService>('query-collections');
