/**
 * Remote schema relationships (Hasura v2's `create_remote_schema_remote_relationship`): fields
 * added to an object type of a remote schema that join, on some of the type's fields, to a table
 * of a source (`to_source`) or to a field of a remote schema (`to_remote_schema`). The metadata
 * operations, the build's checks, and the joined fields a role's schema gets on the type.
 */
import { getNamedType, isLeafType, isObjectType } from 'graphql';
import * as v from '../../core/valibot.js';
import { SvcError } from '../../core/errors.js';
import type { Metadata, OperationDef } from '../../core/plugin.js';
import { nameText } from '../../core/validation.js';
import type { DepTarget, Dependent, JoinedField, SchemaRename } from '../database/index.js';
import { remoteSchemasOf, withRemoteSchemas, type RemoteSchemaMeta, type RemoteSchemaRelationships } from './definition.js';
import { joinsTo, readJoin, readSourceJoin, renameMapped, walkPath, type RemoteRelationshipMeta } from './relationships.js';
import type { ResolvedRemote } from './remote.js';

/*
 * Note [Remote schema relationships]
 * A remote schema's object type may have relationships (metadata: the remote's
 * `remote_relationships`, per `type_name` in the remote's own names, as Hasura exports them).
 * Each is a JoinedField (Note [Joined fields] in plugins/database/schema/joins.ts), made by the
 * same code as a table's: to a table through its select root field for the role
 * (`sourceJoinedField`, Note [Joins to another source]: the table's select permission applies,
 * and a role that may not select the table or a join column does not get the field), to a remote
 * through `joinedField` (Note [Batched remote joins]: the target remote's permission applies).
 * The role's exposed type gets the field (ExposedTypes, marked JOIN). When a plan rewrites the
 * client's selection into the remote's document (./plan.ts `makeConverter`), a relationship field
 * is not sent: the type's join fields are asked instead under hidden keys (`__svc_lhs_<field>`),
 * and the join is recorded at its place in the answer's Shape. When the remote has answered,
 * each join collects the objects of its place that carry the hidden keys (a place under an
 * interface or union also holds objects of other types, answered without them), runs once for
 * all of them (one statement, or one request to the target remote, per relationship and level),
 * puts the values in place; then the hidden keys are removed. Relationships of the joined rows or
 * remote objects are the target's own plan's business, so the nesting goes as deep as the
 * metadata does, one batch per level.
 */

export type SchemaRelationship = { remote: string; typeName: string; rel: RemoteRelationshipMeta };

export const schemaRelationshipId = (remote: string, typeName: string, name: string) => `remote_schema_remote_relationship:${JSON.stringify([remote, typeName, name])}`;

export function schemaRelationshipsOf(r: RemoteSchemaMeta): SchemaRelationship[] {
  return (r.remote_relationships ?? []).flatMap((t) => t.relationships.map((rel) => ({ remote: r.name, typeName: t.type_name, rel })));
}

/** The remote with one relationship of a type replaced (`next`) or removed (undefined). */
export function withSchemaRelationship(r: RemoteSchemaMeta, typeName: string, name: string, next: RemoteRelationshipMeta | undefined): RemoteSchemaMeta {
  const list: RemoteSchemaRelationships[] = [];
  let placed = false;
  for (const t of r.remote_relationships ?? []) {
    if (t.type_name !== typeName) {
      list.push(t);
      continue;
    }
    const rels = t.relationships.flatMap((x) => (x.name === name ? (next ? [next] : []) : [x]));
    if (next && !t.relationships.some((x) => x.name === name)) rels.push(next);
    placed = true;
    if (rels.length) list.push({ type_name: typeName, relationships: rels });
  }
  if (!placed && next) list.push({ type_name: typeName, relationships: [next] });
  const out: RemoteSchemaMeta = { ...r, remote_relationships: list };
  if (list.length === 0) delete out.remote_relationships;
  return out;
}

type Op = <A>(def: Omit<OperationDef<A>, 'mutates'> & { mutates?: boolean }) => void;
type Find = (md: Metadata, name: string) => RemoteSchemaMeta | undefined;
type Replace = (md: Metadata, name: string, next: RemoteSchemaMeta | undefined) => Metadata;

/** Refused before any build: a definition that is neither form (the build checks the rest). */
function checkDefinition(d: Record<string, unknown>): void {
  const keys = ['to_source', 'to_remote_schema'].filter((k) => d[k] !== undefined);
  if (keys.length !== 1) throw new SvcError('parse-failed', 'the definition must have exactly one of to_source and to_remote_schema', { path: '$.args.definition' });
  if (d.to_source !== undefined) {
    const sj = readSourceJoin({ name: '', definition: d });
    if (typeof sj === 'string') throw new SvcError('parse-failed', sj, { path: '$.args.definition.to_source' });
    return;
  }
  if (!readJoin({ name: '', definition: d })) throw new SvcError('parse-failed', 'expected to_remote_schema: {lhs_fields, remote_schema, remote_field}', { path: '$.args.definition.to_remote_schema' });
}

export function registerSchemaRelationshipOperations(op: Op, find: Find, replace: Replace): void {
  const Args = v.object({ remote_schema: nameText, type_name: nameText, name: nameText, definition: v.record(v.string(), v.unknown()) });
  const Ref = v.object({ remote_schema: nameText, type_name: nameText, name: nameText });
  const remoteOf = (md: Metadata, name: string) => {
    const r = find(md, name);
    if (!r) throw new SvcError('not-exists', `remote schema with name ${JSON.stringify(name)} does not exist`, { path: '$.args.remote_schema' });
    return r;
  };
  const has = (r: RemoteSchemaMeta, typeName: string, name: string) => schemaRelationshipsOf(r).some((x) => x.typeName === typeName && x.rel.name === name);
  const missing = (a: { remote_schema: string; type_name: string; name: string }) =>
    new SvcError('not-exists', `remote relationship with name ${JSON.stringify(a.name)} on type ${JSON.stringify(a.type_name)} of remote schema ${JSON.stringify(a.remote_schema)} does not exist`, { path: '$.args.name' });
  for (const type of ['create_remote_schema_remote_relationship', 'update_remote_schema_remote_relationship'] as const) {
    op({
      type,
      args: Args,
      run(a, ctx) {
        const r = remoteOf(ctx.metadata, a.remote_schema);
        const exists = has(r, a.type_name, a.name);
        if (type === 'create_remote_schema_remote_relationship' && exists) {
          throw new SvcError('already-exists', `remote relationship with name ${JSON.stringify(a.name)} already exists on type ${JSON.stringify(a.type_name)} of remote schema ${JSON.stringify(a.remote_schema)}`, { path: '$.args.name' });
        }
        if (type === 'update_remote_schema_remote_relationship' && !exists) throw missing(a);
        checkDefinition(a.definition);
        const next = withSchemaRelationship(r, a.type_name, a.name, { name: a.name, definition: a.definition });
        return { metadata: replace(ctx.metadata, r.name, next), response: { message: 'success' }, defines: [schemaRelationshipId(r.name, a.type_name, a.name)] };
      },
    });
  }
  op({
    type: 'delete_remote_schema_remote_relationship',
    args: Ref,
    run(a, ctx) {
      const r = remoteOf(ctx.metadata, a.remote_schema);
      if (!has(r, a.type_name, a.name)) throw missing(a);
      return { metadata: replace(ctx.metadata, r.name, withSchemaRelationship(r, a.type_name, a.name, undefined)), response: { message: 'success' } };
    },
  });
}

/** The relationships of other remotes' types that join to this remote (removal is refused). */
export function schemaRelationshipUsers(remotes: readonly RemoteSchemaMeta[], remote: string): string[] {
  const out: string[] = [];
  for (const r of remotes) {
    if (r.name === remote) continue;
    for (const x of schemaRelationshipsOf(r)) {
      if (readJoin(x.rel)?.remoteSchema === remote) out.push(`remote_schema_remote_relationship ${x.rel.name} of type ${x.typeName} in remote schema ${r.name}`);
    }
  }
  return out;
}

/** What the build checks a relationship against. */
export interface SchemaRelationshipEnv {
  remotes: ReadonlyMap<string, ResolvedRemote>;
  /** Whether a remote of that name is in the metadata (consistent or not). */
  known(remote: string): boolean;
  /** A tracked table's columns, or undefined. */
  columns(source: string, schema: string, name: string): readonly string[] | undefined;
}

/** Why a relationship cannot be served, or undefined. */
export function checkSchemaRelationship(x: SchemaRelationship, env: SchemaRelationshipEnv): string | undefined {
  const r = env.remotes.get(x.remote);
  if (!r) return `remote schema ${JSON.stringify(x.remote)} is inconsistent`;
  const t = r.schema.getType(x.typeName);
  if (!t) return `type with name ${JSON.stringify(x.typeName)} not found in remote schema ${JSON.stringify(x.remote)}`;
  if (!isObjectType(t)) return `type ${JSON.stringify(x.typeName)} of remote schema ${JSON.stringify(x.remote)} is not an object type`;
  if (t.getFields()[x.rel.name]) return `the name ${JSON.stringify(x.rel.name)} is already a field of type ${JSON.stringify(x.typeName)}`;
  const leaf = (f: string) => {
    const d = t.getFields()[f];
    if (!d) return `field ${JSON.stringify(f)} not found in type ${JSON.stringify(x.typeName)}`;
    if (!isLeafType(getNamedType(d.type))) return `field ${JSON.stringify(f)} of type ${JSON.stringify(x.typeName)} cannot be a join field: it is not a scalar or an enum`;
    return undefined;
  };
  const sj = readSourceJoin(x.rel);
  if (typeof sj === 'string') return sj;
  if (sj) {
    const cols = env.columns(sj.source, sj.table.schema, sj.table.name);
    if (!cols) return `table ${JSON.stringify(`${sj.table.schema}.${sj.table.name}`)} is not tracked in source ${JSON.stringify(sj.source)}`;
    for (const [from, to] of sj.mapping) {
      const bad = leaf(from);
      if (bad) return bad;
      if (!cols.includes(to)) return `column ${JSON.stringify(to)} does not exist in table ${JSON.stringify(sj.table.name)}`;
    }
    return undefined;
  }
  const j = readJoin(x.rel);
  if (!j) return 'expected to_source or to_remote_schema';
  for (const f of j.lhs) {
    const bad = leaf(f);
    if (bad) return bad;
  }
  const target = env.remotes.get(j.remoteSchema);
  if (!target) return env.known(j.remoteSchema) ? `remote schema ${JSON.stringify(j.remoteSchema)} is inconsistent` : `remote schema with name ${JSON.stringify(j.remoteSchema)} not found`;
  const path = walkPath(target.schema, j);
  return typeof path === 'string' ? path : undefined;
}

/** The joined fields of a remote's types for a role: `make` gives one relationship's field (or
 * undefined where the role may not use it); made once per type. */
export function schemaJoins(byType: ReadonlyMap<string, readonly RemoteRelationshipMeta[]> | undefined, make: (rel: RemoteRelationshipMeta, typeName: string) => JoinedField | undefined): ((typeName: string) => Readonly<Record<string, JoinedField>> | undefined) | undefined {
  if (!byType || byType.size === 0) return undefined;
  const made = new Map<string, Record<string, JoinedField>>();
  return (typeName) => {
    const rels = byType.get(typeName);
    if (!rels) return undefined;
    let out = made.get(typeName);
    if (!out) {
      out = {};
      for (const rel of rels) {
        const f = make(rel, typeName);
        if (f) out[rel.name] = f;
      }
      made.set(typeName, out);
    }
    return out;
  };
}

/** The remote schemas' relationships that join to a table or a column of one (for the database
 * plugin's dependents: untrack_table, a column dropped by run_sql), and their join columns
 * renamed with the table's. */
export const schemaRelationshipTargets = {
  dependents(md: Metadata, target: DepTarget): Dependent[] {
    const out: Dependent[] = [];
    for (const r of remoteSchemasOf(md)) {
      for (const x of schemaRelationshipsOf(r)) {
        const sj = readSourceJoin(x.rel);
        if (!sj || typeof sj === 'string' || !joinsTo(sj, target)) continue;
        out.push({
          id: `remote_schema_remote_relationship@${JSON.stringify([r.name, x.typeName, x.rel.name])}`,
          description: `remote_schema_remote_relationship ${x.rel.name} of type ${x.typeName} in remote schema ${r.name}`,
          remove: (m: Metadata) => withRemoteSchemas(m, remoteSchemasOf(m).map((y) => (y.name === r.name ? withSchemaRelationship(y, x.typeName, x.rel.name, undefined) : y))),
        });
      }
    }
    return out;
  },
  rename(md: Metadata, rn: SchemaRename): Metadata {
    if (rn.kind !== 'column') return md;
    const target: DepTarget = { kind: 'column', source: rn.source, table: rn.table, column: rn.from };
    let changed = false;
    const next = remoteSchemasOf(md).map((r) => {
      let out = r;
      for (const x of schemaRelationshipsOf(r)) {
        const sj = readSourceJoin(x.rel);
        if (!sj || typeof sj === 'string' || !joinsTo(sj, target)) continue;
        out = withSchemaRelationship(out, x.typeName, x.rel.name, renameMapped(x.rel, 'to', rn.from, rn.to));
        changed = true;
      }
      return out;
    });
    return changed ? withRemoteSchemas(md, next) : md;
  },
};
