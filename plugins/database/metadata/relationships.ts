/**
 * Command group: local relationships. `<prefix>_create_object_relationship`,
 * `<prefix>_create_array_relationship`, `<prefix>_drop_relationship`, `<prefix>_rename_relationship`,
 * `<prefix>_set_relationship_comment` (legacy names without the prefix).
 *
 * As in Hasura v2, an operation only checks what the metadata alone can tell (the table is tracked,
 * the name is free); whether the foreign key or the columns exist is decided by the build
 * (`resolveTable`), and a new relationship that comes out inconsistent fails its operation with
 * `invalid-configuration` (see `OperationResult.defines`).
 */
import * as v from '../../../core/valibot.js';
import { SvcError } from '../../../core/errors.js';
import { isGraphQLName, nameText, optionalComment } from '../../../core/validation.js';

/** A relationship's name becomes a GraphQL field: it must be a GraphQL name (Hasura's message). */
const RelationshipNameSchema = v.pipe(nameText, v.check(isGraphQLName, (issue) => `${issue.input} is not valid GraphQL name`));
import type { Endpoint, OperationDef } from '../../../core/plugin.js';
import type {
  CommandGroup,
  DepTarget,
  Dependent,
  Introspection,
  KindBinding,
  Metadata,
  QualifiedTable,
  RelationshipMeta,
  SchemaRename,
  TableInfo,
  TableMeta,
  TableResolveContext,
} from '../model/types.js';
import {
  qtDisplay,
  qtKey,
  qualifiedTableSchema,
  requireTable,
  sameTable,
  SourceNameSchema,
  sourcesOf,
  updateSource,
  updateTable,
  updateTableIfPresent,
} from '../model/meta.js';
import type { QualifiedNameSchema } from '../model/meta.js';
import type { DatabaseService } from '../model/service.js';
import { renameInPermissions } from './permissions.js';

const success = { message: 'success' };

export type RelKind = 'object' | 'array';
const KINDS: RelKind[] = ['object', 'array'];
const LIST = { object: 'object_relationships', array: 'array_relationships' } as const;
const INCONSISTENCY_TYPE = { object: 'object_relation', array: 'array_relation' } as const;

// ---------------------------------------------------------------------------------------------
// `using`: argument schemas, stored shape and the parsed form

/** What a relationship joins on, once parsed. */
type Join =
  /** Object relationship over a foreign key of its own table (`foreign_key_constraint_on: "col"`). */
  | { via: 'own_fkey'; columns: string[] }
  /** A foreign key of the remote table that points to this table (`{table, column(s)}`). */
  | { via: 'remote_fkey'; table: QualifiedTable; columns: string[] }
  | { via: 'manual'; table: QualifiedTable; mapping: Record<string, string>; insertionOrder: string | null };

const ColumnsSchema = v.union(
  [v.pipe(v.string(), v.transform((c) => [c])), v.pipe(v.array(v.string()), v.minLength(1, 'Expected string or array'))],
  'Expected string or array',
);

const remoteFkeySchema = (table: QualifiedNameSchema) => v.pipe(
  v.object(
    { table, column: v.optional(ColumnsSchema), columns: v.optional(ColumnsSchema) },
    'Expecting object { table, columns }.',
  ),
  v.check((o) => (o.column === undefined) !== (o.columns === undefined), "expected exactly one of 'column' or 'columns'"),
  v.transform((o): Join => ({ via: 'remote_fkey', table: o.table, columns: (o.column ?? o.columns)! })),
);

const manualSchema = (table: QualifiedNameSchema) => v.pipe(
  v.object(
    {
      remote_table: table,
      // An empty mapping would join every row with every other.
      column_mapping: v.pipe(v.record(v.string(), v.string()), v.check((m) => Object.keys(m).length > 0, 'column_mapping must not be empty')),
      insertion_order: v.optional(v.nullable(v.picklist(['before_parent', 'after_parent'])), null),
    },
    'manual_configuration should be an object',
  ),
  v.transform((o): Join => ({ via: 'manual', table: o.remote_table, mapping: o.column_mapping, insertionOrder: o.insertion_order })),
);

const usingKeys = 'one of foreign_key_constraint_on/manual_configuration should be present';

function usingSchema(kind: RelKind, table: QualifiedNameSchema) {
  const remoteFkey = remoteFkeySchema(table);
  const fkey = kind === 'object' ? v.union([v.pipe(ColumnsSchema, v.transform((columns): Join => ({ via: 'own_fkey', columns }))), remoteFkey]) : remoteFkey;
  return v.pipe(
    v.object({ foreign_key_constraint_on: v.optional(fkey), manual_configuration: v.optional(manualSchema(table)) }, 'using should be an object'),
    v.check(
      (o) => (o.foreign_key_constraint_on === undefined) !== (o.manual_configuration === undefined),
      (issue) => {
        const o = issue.input as Record<string, unknown>;
        return o.foreign_key_constraint_on === undefined ? `atleast ${usingKeys}` : `only ${usingKeys}`;
      },
    ),
    v.transform((o) => (o.foreign_key_constraint_on ?? o.manual_configuration)!),
  );
}
type UsingSchema = ReturnType<typeof usingSchema>;
/** The `using` schemas of a source kind whose default schema is `defaultSchema`, built once per default schema. */
const usingSchemas = new Map<string, Record<RelKind, UsingSchema>>();
function usingOf(defaultSchema: string, namespace = 'schema'): Record<RelKind, UsingSchema> {
  const key = `${namespace}\u0000${defaultSchema}`;
  let u = usingSchemas.get(key);
  if (!u) {
    // Note [Table names of a kind]: the remote table is named as the kind names tables.
    const table = qualifiedTableSchema(defaultSchema, namespace);
    usingSchemas.set(key, (u = { object: usingSchema('object', table), array: usingSchema('array', table) }));
  }
  return u;
}

/** The stored (exported) form of a join, with the keys in the order Hasura exports them. */
function storedUsing(j: Join): Record<string, unknown> {
  const cols = (columns: string[]) => (columns.length === 1 ? { column: columns[0] } : { columns });
  switch (j.via) {
    case 'own_fkey':
      return { foreign_key_constraint_on: j.columns.length === 1 ? j.columns[0] : j.columns };
    case 'remote_fkey':
      return { foreign_key_constraint_on: { ...cols(j.columns), table: j.table } };
    case 'manual':
      return { manual_configuration: { column_mapping: j.mapping, insertion_order: j.insertionOrder, remote_table: j.table } };
  }
}

/** Stored relationships of a kind, for `replace_metadata`: validated and normalised like the
 * operations' args (in a source whose kind's default schema is `defaultSchema`). */
export function relationshipSchema(kind: RelKind, defaultSchema: string, namespace?: string) {
  return v.pipe(
    v.object({ name: RelationshipNameSchema, using: usingOf(defaultSchema, namespace)[kind], comment: optionalComment }),
    v.transform((r): RelationshipMeta => entry(r.name, r.using, r.comment)),
  );
}

function entry(name: string, join: Join, comment: string | null | undefined): RelationshipMeta {
  const out: RelationshipMeta = { name, using: storedUsing(join) };
  if (comment !== undefined && comment !== null) out.comment = comment;
  return out;
}

/** Joins of stored relationships, parsed once per stored object (metadata is immutable). Stored
 * table names are qualified (parsing qualified them), so `defaultSchema`, the source kind's, only
 * matters for a name that is not ('' when the kind is not known: no table is then in it). */
const parsedJoins = new WeakMap<RelationshipMeta, Join | null>();
function joinOf(kind: RelKind, rel: RelationshipMeta, defaultSchema: string): Join | null {
  let j = parsedJoins.get(rel);
  if (j === undefined) {
    const r = v.safeParse(usingOf(defaultSchema)[kind], rel.using);
    j = r.success ? r.output : null;
    parsedJoins.set(rel, j);
  }
  return j;
}

// ---------------------------------------------------------------------------------------------
// Helpers over tables and introspection

function relationshipsOf(t: TableMeta, kind: RelKind): RelationshipMeta[] {
  return (t[LIST[kind]] as RelationshipMeta[] | undefined) ?? [];
}

function findRelationship(t: TableMeta, name: string): { kind: RelKind; rel: RelationshipMeta } | undefined {
  for (const kind of KINDS) {
    const rel = relationshipsOf(t, kind).find((r) => r.name === name);
    if (rel) return { kind, rel };
  }
  return undefined;
}

function withoutRelationship(t: TableMeta, name: string): TableMeta {
  return { ...t, object_relationships: relationshipsOf(t, 'object').filter((r) => r.name !== name), array_relationships: relationshipsOf(t, 'array').filter((r) => r.name !== name) };
}

/** Identity of a relationship, both as a dependent and as an inconsistent object (see `Dependent.id`). */
const relId = (source: string, table: QualifiedTable, name: string) => `relationship@${source}:${qtKey(table)}:${name}`;

const sameColumns = (a: string[], b: string[]) => a.length === b.length && a.every((c) => b.includes(c));

/** Foreign keys of `on` over exactly `columns` (and pointing to `to`, when given). */
function matchingFkeys(on: TableInfo, columns: string[], to?: QualifiedTable) {
  return on.foreignKeys.filter((fk) => sameColumns(fk.columns, columns) && (!to || (fk.refSchema === to.schema && fk.refTable === to.name)));
}

/** The remote table of a join; an own-table foreign key is looked up in the introspection. */
function remoteTableOf(j: Join, own: QualifiedTable, intro: Introspection | undefined): QualifiedTable | undefined {
  if (j.via !== 'own_fkey') return j.table;
  const info = intro?.tables.get(qtKey(own));
  const fks = info ? matchingFkeys(info, j.columns) : [];
  return fks.length === 1 ? { schema: fks[0]!.refSchema, name: fks[0]!.refTable } : undefined;
}

/** A table's relationships with what they join (those that parse), and the keys of the tables
 * they join: its own and the remote ones (a dependency lookup for another table skips it). */
interface TableJoins {
  intro: Introspection | undefined;
  joins: { rel: RelationshipMeta; join: Join; remote: QualifiedTable | undefined }[];
  tables: Set<string>;
}
/** Kept per (immutable) table entry and introspection: dependency lookups read every table's. */
const joinsCache = new WeakMap<TableMeta, TableJoins>();
function tableJoins(t: TableMeta, intro: Introspection | undefined, defaultSchema: string): TableJoins {
  const cached = joinsCache.get(t);
  if (cached && cached.intro === intro) return cached;
  const out: TableJoins = { intro, joins: [], tables: new Set([qtKey(t.table)]) };
  for (const kind of KINDS) {
    for (const rel of relationshipsOf(t, kind)) {
      const join = joinOf(kind, rel, defaultSchema);
      if (!join) continue;
      const remote = remoteTableOf(join, t.table, intro);
      out.joins.push({ rel, join, remote });
      if (remote) out.tables.add(qtKey(remote));
    }
  }
  joinsCache.set(t, out);
  return out;
}

/** Whether a table already has a field (column, relationship or computed field) of that name. */
function hasField(t: TableMeta, info: TableInfo | undefined, name: string): boolean {
  return (
    (info?.columns.some((c) => c.name === name) ?? false) ||
    findRelationship(t, name) !== undefined ||
    (t.computed_fields ?? []).some((cf) => cf.name === name)
  );
}

/** GraphQL names given to columns by the table's customization. */
function customColumnNames(t: TableMeta): Map<string, string> {
  const out = new Map<string, string>();
  for (const [col, cfg] of Object.entries(t.configuration?.column_config ?? {})) if (cfg?.custom_name) out.set(col, cfg.custom_name);
  for (const [col, name] of Object.entries(t.configuration?.custom_column_names ?? {})) out.set(col, name);
  return out;
}

const argsPath = (endpoint: Endpoint) => (endpoint === 'metadata' ? '$.args' : '$');

// ---------------------------------------------------------------------------------------------
// The command group

export function relationshipsGroup(db: DatabaseService): CommandGroup {
  function requireRelationship(md: Metadata, source: string, table: QualifiedTable, defaultSchema: string, name: string, info: TableInfo | undefined) {
    const t = requireTable(md, source, table, defaultSchema, '$.args');
    const found = findRelationship(t, name);
    if (found) return { t, ...found };
    if (info?.columns.some((c) => c.name === name) || (t.computed_fields ?? []).some((cf) => cf.name === name)) {
      throw new SvcError('unexpected-payload', `expecting a relationship; but, "${name}" is a postgres column; `, { path: '$.args' });
    }
    throw new SvcError('not-exists', `relationship "${name}" does not exist`, { path: '$.args' });
  }

  function operations(bind: KindBinding): OperationDef[] {
    const ops: OperationDef[] = [];
    const op = (name: string, def: Omit<OperationDef, 'type' | 'legacy'>) => ops.push({ type: bind.name(name), legacy: bind.legacy(name), ...def });
    const defaultSchema = bind.kind.dialect.defaultSchema;
    const using = usingOf(defaultSchema, bind.kind.dialect.namespace);

    for (const kind of KINDS) {
      const args = v.object({
        table: bind.table,
        name: RelationshipNameSchema,
        using: using[kind],
        comment: optionalComment,
        source: SourceNameSchema,
      });
      op(`create_${kind}_relationship`, {
        args,
        mutates: true,
        run: async (a: v.InferOutput<typeof args>, ctx) => {
          const t = requireTable(ctx.metadata, a.source, a.table, defaultSchema, '$.args');
          const intro = await db.introspection(ctx, a.source);
          if (hasField(t, intro.tables.get(qtKey(a.table)), a.name)) {
            throw new SvcError('already-exists', `column/relationship "${a.name}" of table "${bind.display(a.table)}" already exists`, { path: '$.args' });
          }
          const rel = entry(a.name, a.using, a.comment);
          parsedJoins.set(rel, a.using);
          return {
            metadata: updateTable(ctx.metadata, a.source, a.table, defaultSchema, (x) => ({ ...x, [LIST[kind]]: [...relationshipsOf(x, kind), rel] })),
            response: success,
            defines: [relId(a.source, a.table, a.name)],
          };
        },
      });
    }

    const dropArgs = v.object({ table: bind.table, relationship: nameText, cascade: v.optional(v.boolean(), false), source: SourceNameSchema });
    op('drop_relationship', {
      args: dropArgs,
      mutates: true,
      run: async (a: v.InferOutput<typeof dropArgs>, ctx) => {
        const intro = await db.introspection(ctx, a.source);
        requireRelationship(ctx.metadata, a.source, a.table, defaultSchema, a.relationship, intro.tables.get(qtKey(a.table)));
        let md = db.cascade(ctx.metadata, { kind: 'relationship', source: a.source, table: a.table, name: a.relationship }, a.cascade);
        md = updateTable(md, a.source, a.table, defaultSchema, (t) => withoutRelationship(t, a.relationship));
        return { metadata: md, response: success };
      },
    });

    const renameArgs = v.object({ table: bind.table, name: nameText, new_name: RelationshipNameSchema, source: SourceNameSchema });
    op('rename_relationship', {
      args: renameArgs,
      mutates: true,
      run: async (a: v.InferOutput<typeof renameArgs>, ctx) => {
        const intro = await db.introspection(ctx, a.source);
        const info = intro.tables.get(qtKey(a.table));
        const { t, kind, rel } = requireRelationship(ctx.metadata, a.source, a.table, defaultSchema, a.name, info);
        if (hasField(t, info, a.new_name)) {
          throw new SvcError(
            'already-exists',
            `cannot rename relationship "${a.name}" to "${a.new_name}" in table "${bind.display(a.table)}" as a column/relationship with the name already exists`,
            { path: '$.args' },
          );
        }
        // Permissions that traverse the relationship by name, resolved while it still has its old name.
        let md = renameInPermissions(ctx.metadata, a.source, { kind: 'relationship', table: a.table, from: a.name, to: a.new_name }, intro, bind.kind.dialect);
        const renamed = { ...rel, name: a.new_name };
        const join = joinOf(kind, rel, defaultSchema);
        if (join) parsedJoins.set(renamed, join);
        // Hasura re-inserts the renamed relationship, so it moves to the end of its list.
        md = updateTable(md, a.source, a.table, defaultSchema, (x) => ({ ...x, [LIST[kind]]: [...relationshipsOf(x, kind).filter((r) => r.name !== a.name), renamed] }));
        return { metadata: md, response: success, defines: [relId(a.source, a.table, a.new_name)] };
      },
    });

    // The documented legacy example sends the relationship as `name`.
    const commentArgs = v.object({
      table: bind.table,
      relationship: v.optional(nameText),
      name: v.optional(nameText),
      comment: optionalComment,
      source: SourceNameSchema,
    });
    op('set_relationship_comment', {
      args: commentArgs,
      mutates: true,
      run: async (a: v.InferOutput<typeof commentArgs>, ctx) => {
        const name = a.relationship ?? a.name;
        if (name === undefined) throw new SvcError('parse-failed', 'key "relationship" not found', { path: argsPath(ctx.endpoint) });
        const intro = await db.introspection(ctx, a.source);
        const { kind, rel } = requireRelationship(ctx.metadata, a.source, a.table, defaultSchema, name, intro.tables.get(qtKey(a.table)));
        const next: RelationshipMeta = { name: rel.name, using: rel.using };
        if (a.comment !== undefined && a.comment !== null) next.comment = a.comment;
        const join = joinOf(kind, rel, defaultSchema);
        if (join) parsedJoins.set(next, join);
        const md = updateTable(ctx.metadata, a.source, a.table, defaultSchema, (x) => ({ ...x, [LIST[kind]]: relationshipsOf(x, kind).map((r) => (r.name === name ? next : r)) }));
        return { metadata: md, response: success, defines: [relId(a.source, a.table, name)] };
      },
    });

    return ops;
  }

  /** Why a relationship is inconsistent (Hasura's reasons, in Hasura's order of checks), or undefined. */
  function problem(ctx: TableResolveContext, kind: RelKind, rel: RelationshipMeta): string | undefined {
    const { table, info, introspection, tracked, source } = ctx;
    const own = table.table;
    const defaultSchema = ctx.kind.dialect.defaultSchema;
    const join = joinOf(kind, rel, defaultSchema);
    const inRel = (msg: string) => `in table "${qtDisplay(own, defaultSchema)}": in relationship "${rel.name}": ${msg}`;
    if (!join) return inRel('the relationship definition cannot be parsed');

    // 1. The foreign key the relationship is built on.
    let remote: QualifiedTable;
    if (join.via === 'manual') remote = join.table;
    else {
      const holder = join.via === 'own_fkey' ? info : introspection.tables.get(qtKey(join.table));
      if (!holder) return inRel(`table "${qtDisplay((join as { table: QualifiedTable }).table, defaultSchema)}" does not exist in source: ${source.name}`);
      const fks = matchingFkeys(holder, join.columns, join.via === 'remote_fkey' ? own : undefined);
      if (fks.length === 0) return inRel('no foreign constraint exists on the given column(s)');
      if (fks.length > 1) return inRel('more than one foreign key constraint exists on the given column(s)');
      remote = join.via === 'remote_fkey' ? join.table : { schema: fks[0]!.refSchema, name: fks[0]!.refTable };
    }
    ctx.dependsOn(qtKey(remote));

    // 2. The field name against the table's columns and their custom GraphQL names.
    if (info.columns.some((c) => c.name === rel.name)) return 'field definition conflicts with postgres column';
    for (const [col, gqlName] of customColumnNames(table)) {
      if (gqlName === rel.name && col !== rel.name) return `field definition conflicts with custom field name for postgres column "${col}"`;
    }

    // 3. What the relationship depends on: the remote table, tracked, and the columns it joins.
    const remoteInfo = tracked.get(qtKey(remote))?.info;
    const hasColumn = (t: TableInfo, c: string) => t.columns.some((x) => x.name === c);
    if (join.via === 'manual') {
      for (const c of Object.keys(join.mapping)) if (!hasColumn(info, c)) return `table "${qtDisplay(own, defaultSchema)}" has no field named "${c}"`;
    }
    if (!remoteInfo) return `table "${qtDisplay(remote, defaultSchema)}" is not tracked`;
    if (join.via === 'manual') {
      for (const c of Object.values(join.mapping)) if (!hasColumn(remoteInfo, c)) return `table "${qtDisplay(remote, defaultSchema)}" has no field named "${c}"`;
    }
    return undefined;
  }

  function resolveTable(ctx: TableResolveContext): void {
    const sourceName = ctx.source.name;
    const own = ctx.table.table;
    const defaultSchema = ctx.kind.dialect.defaultSchema;
    for (const kind of KINDS) {
      for (const rel of relationshipsOf(ctx.table, kind)) {
        const reason = problem(ctx, kind, rel);
        if (reason === undefined) continue;
        ctx.report({
          type: INCONSISTENCY_TYPE[kind],
          name: `${INCONSISTENCY_TYPE[kind]} ${rel.name} in table ${qtDisplay(own, defaultSchema)} in source ${sourceName}`,
          reason: `Inconsistent object: ${reason}`,
          definition: { source: sourceName, table: own, name: rel.name, using: rel.using, comment: rel.comment ?? null },
          id: relId(sourceName, own, rel.name),
          remove: (md) => updateTableIfPresent(md, sourceName, own, (t) => withoutRelationship(t, rel.name)),
        });
      }
    }
  }

  function dependents(md: Metadata, target: DepTarget): Dependent[] {
    if (target.kind !== 'table' && target.kind !== 'column' && target.kind !== 'foreign_key') return [];
    const source = sourcesOf(md).find((s) => s.name === target.source);
    if (!source) return [];
    // The remote table of an own-table foreign key comes from the committed introspection: the
    // schema as it was before the request (run_sql may have dropped the key already).
    const intro = db.committed().sources.get(source.name)?.introspection ?? undefined;
    const targetKey = qtKey(target.table);
    const defaultSchema = db.defaultSchemaOf(source) ?? '';
    const out: Dependent[] = [];
    // The entries that may refer to the table, not every one (Note [Dependents through the build]).
    for (const t of db.tablesReaching(source, targetKey).tables) {
      const { joins, tables } = tableJoins(t, intro, defaultSchema);
      if (!tables.has(targetKey)) continue;
      const own = t.table;
      for (const { rel, join, remote } of joins) {
        let depends: boolean;
        if (target.kind === 'table') depends = sameTable(own, target.table) || (remote !== undefined && sameTable(remote, target.table));
        else if (target.kind === 'foreign_key') {
          depends =
            (join.via === 'own_fkey' && sameTable(own, target.table) && sameColumns(join.columns, target.columns)) ||
            (join.via === 'remote_fkey' && sameTable(join.table, target.table) && sameTable(own, target.refTable) && sameColumns(join.columns, target.columns));
        } else {
          // The columns each side joins on, as Hasura records them as dependencies.
          const ownColumns = join.via === 'own_fkey' ? join.columns : join.via === 'manual' ? Object.keys(join.mapping) : [];
          const remoteColumns = join.via === 'remote_fkey' ? join.columns : join.via === 'manual' ? Object.values(join.mapping) : [];
          depends =
            (sameTable(own, target.table) && ownColumns.includes(target.column)) ||
            (remote !== undefined && sameTable(remote, target.table) && remoteColumns.includes(target.column));
        }
        if (!depends) continue;
        out.push({
          id: relId(source.name, own, rel.name),
          description: `relationship ${qtDisplay(own, defaultSchema)}.${rel.name} in source "${source.name}"`,
          remove: (m) => updateTableIfPresent(m, source.name, own, (x) => withoutRelationship(x, rel.name)),
          target: { kind: 'relationship', source: source.name, table: own, name: rel.name },
        });
      }
    }
    return out;
  }

  /** Follows a table or column renamed in the database (run_sql): the joins name them. */
  function rename(md: Metadata, r: SchemaRename): Metadata {
    if (r.kind === 'function') return md;
    const source = sourcesOf(md).find((s) => s.name === r.source);
    if (!source) return md;
    const defaultSchema = db.defaultSchemaOf(source) ?? '';
    const renameJoin = (join: Join, own: QualifiedTable): Join => {
      if (r.kind === 'table') return join.via !== 'own_fkey' && sameTable(join.table, r.from) ? { ...join, table: r.to } : join;
      const col = (c: string) => (c === r.from ? r.to : c);
      const onOwn = sameTable(own, r.table);
      switch (join.via) {
        case 'own_fkey':
          return onOwn ? { ...join, columns: join.columns.map(col) } : join;
        case 'remote_fkey':
          return sameTable(join.table, r.table) ? { ...join, columns: join.columns.map(col) } : join;
        case 'manual': {
          const onRemote = sameTable(join.table, r.table);
          if (!onOwn && !onRemote) return join;
          const mapping = Object.fromEntries(Object.entries(join.mapping).map(([l, rc]) => [onOwn ? col(l) : l, onRemote ? col(rc) : rc]));
          return { ...join, mapping };
        }
      }
    };
    let changed = false;
    const tables = source.tables.map((t) => {
      let next = t;
      for (const kind of KINDS) {
        const rels = relationshipsOf(t, kind);
        const updated = rels.map((rel) => {
          const join = joinOf(kind, rel, defaultSchema);
          if (!join) return rel;
          const renamed = renameJoin(join, t.table);
          const out = entry(rel.name, renamed, rel.comment);
          if (JSON.stringify(out.using) === JSON.stringify(rel.using)) return rel;
          parsedJoins.set(out, renamed);
          return out;
        });
        if (updated.some((x, i) => x !== rels[i])) next = { ...next, [LIST[kind]]: updated };
      }
      if (next !== t) changed = true;
      return next;
    });
    return changed ? updateSource(md, source.name, (s) => ({ ...s, tables })) : md;
  }

  return { name: 'relationships', operations, resolveTable, dependents, rename };
}
