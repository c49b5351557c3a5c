/**
 * Query collections and the allow-list as the metadata holds them (Hasura v2's `query_collections`
 * and `allowlist` sections) and the arguments of their operations, with Hasura's parsers' messages
 * (Hasura/RQL/Types/QueryCollection.hs, Allowlist.hs).
 */
import { Kind, parse, type DocumentNode } from 'graphql';
import * as v from '../../core/valibot.js';
import { jsonTypeName, nameText, optionalComment } from '../../core/validation.js';
import type { Metadata } from '../../core/plugin.js';

export interface ListedQuery {
  name: string;
  query: string;
}

export interface Collection {
  name: string;
  definition: { queries: ListedQuery[] };
  comment?: string | null;
}

export type AllowlistScope = { global: true } | { global: false; roles: string[] };

export interface AllowlistEntry {
  collection: string;
  scope: AllowlistScope;
}

export const collectionsOf = (md: Metadata): Collection[] => (md.query_collections as Collection[] | undefined) ?? [];
export const allowlistOf = (md: Metadata): AllowlistEntry[] => (md.allowlist as AllowlistEntry[] | undefined) ?? [];

/** A GraphQL executable document, or undefined when the text is not one (Hasura's
 * parseExecutableDoc: operations and fragments only). */
export function parseExecutable(text: string): DocumentNode | undefined {
  let doc: DocumentNode;
  try {
    doc = parse(text, { noLocation: true });
  } catch {
    return undefined;
  }
  for (const d of doc.definitions) if (d.kind !== Kind.OPERATION_DEFINITION && d.kind !== Kind.FRAGMENT_DEFINITION) return undefined;
  return doc;
}

/** A saved query's text: it must parse as a GraphQL executable document. */
export const QueryText = v.pipe(
  v.string('expecting String for GraphQL query'),
  v.check((t) => parseExecutable(t) !== undefined, 'parsing the graphql query failed'),
);

export const ListedQuerySchema = v.object({ name: nameText, query: QueryText });

const duplicates = (names: string[]): string[] => {
  const seen = new Set<string>();
  const dup = new Set<string>();
  for (const n of names) (seen.has(n) ? dup : seen).add(n);
  return [...dup];
};

/** `found duplicate query names "a", "b"` (Hasura's addCollectionP2), or undefined. */
export function duplicateQueryNames(queries: readonly ListedQuery[]): string | undefined {
  const dup = duplicates(queries.map((q) => q.name));
  return dup.length ? `found duplicate query names ${dup.map((n) => JSON.stringify(n)).join(', ')}` : undefined;
}

export const CollectionSchema = v.pipe(
  v.object({
    name: nameText,
    definition: v.object({ queries: v.array(ListedQuerySchema) }),
    comment: optionalComment,
  }),
  v.transform((c): Collection => (c.comment === undefined ? { name: c.name, definition: c.definition } : { name: c.name, definition: c.definition, comment: c.comment })),
);

/** Hasura's AllowlistScope parser: `global` is required; `roles` only, and then required and
 * non-empty without duplicates, when it is false. */
export const ScopeSchema: v.GenericSchema<unknown, AllowlistScope> = v.pipe(
  v.object({ global: v.boolean(), roles: v.optional(v.unknown()) }),
  v.rawTransform(({ dataset, addIssue, NEVER }): AllowlistScope => {
    const { global, roles } = dataset.value;
    if (global) {
      if (roles !== undefined && roles !== null) {
        addIssue({ message: 'roles are not allowed when global is true' });
        return NEVER;
      }
      return { global: true };
    }
    if (roles === undefined) {
      addIssue({ message: 'key "roles" not found' });
      return NEVER;
    }
    const at = (key: string | number, input: unknown, value: unknown) => ({ type: 'object', origin: 'value', input, key, value }) as never;
    if (!Array.isArray(roles)) {
      addIssue({ message: `parsing NonEmpty failed, expected Array, but encountered ${jsonTypeName(roles)}`, path: [at('roles', dataset.value, roles)] });
      return NEVER;
    }
    const parsed = v.safeParse(v.array(nameText), roles);
    if (!parsed.success) {
      const index = (parsed.issues[0]!.path?.[0] as { key?: number } | undefined)?.key ?? 0;
      const bad = roles[index];
      const message = typeof bad === 'string' ? parsed.issues[0]!.message : `parsing Text failed, expected String, but encountered ${jsonTypeName(bad)}`;
      addIssue({ message, path: [at('roles', dataset.value, roles), at(index, roles, bad)] });
      return NEVER;
    }
    if (parsed.output.length === 0) {
      addIssue({ message: 'parsing NonEmpty failed, unexpected empty list', path: [at('roles', dataset.value, roles)] });
      return NEVER;
    }
    if (new Set(parsed.output).size !== parsed.output.length) {
      addIssue({ message: 'duplicate roles are not allowed' });
      return NEVER;
    }
    return { global: false, roles: parsed.output };
  }),
) as v.GenericSchema<unknown, AllowlistScope>;

export const GLOBAL: AllowlistScope = { global: true };

export const AllowlistEntrySchema = v.pipe(
  v.object({ collection: nameText, scope: v.optional(v.nullable(ScopeSchema)) }),
  v.transform((e): AllowlistEntry => ({ collection: e.collection, scope: e.scope ?? GLOBAL })),
);

/** Hasura's parseListAsMap: a section may not name one object twice. */
const unique = <T>(what: string, key: (x: T) => string) =>
  v.check<T[], (issue: v.CheckIssue<T[]>) => string>(
    (list) => duplicates(list.map(key)).length === 0,
    (issue) => `multiple declarations exist for the following ${what}: ${duplicates(issue.input.map(key)).join(', ')}`,
  );

export const CollectionsSectionSchema = v.pipe(
  v.array(CollectionSchema),
  unique<Collection>('query collections', (c) => c.name),
  v.check<Collection[], (issue: v.CheckIssue<Collection[]>) => string>(
    (list) => list.every((c) => duplicateQueryNames(c.definition.queries) === undefined),
    (issue) => issue.input.map((c) => duplicateQueryNames(c.definition.queries)).find((m) => m)!,
  ),
);

export const AllowlistSectionSchema = v.pipe(v.array(AllowlistEntrySchema), unique<AllowlistEntry>('allowlist entries', (e) => e.collection));
