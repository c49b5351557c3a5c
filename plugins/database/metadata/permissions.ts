/**
 * Command group: permissions. `<prefix>_create_{insert,select,update,delete}_permission`,
 * `<prefix>_drop_*_permission`, `<prefix>_set_permission_comment` (and the unprefixed legacy names).
 *
 * As in Hasura v2, an operation only checks what the metadata itself says (the table is tracked,
 * the role has no such permission yet) and stores the permission in its export shape; the build
 * checks it against the live schema (columns, computed fields, boolean expressions, presets) and
 * reports a `<type>_permission` inconsistency, which fails the operation that defined it with
 * `invalid-configuration` (OperationResult.defines).
 */
import * as v from '../../../core/valibot.js';
import { SvcError } from '../../../core/errors.js';
import type { OperationContext, OperationDef } from '../../../core/plugin.js';
import { jsonTypeName, nameText, optionalComment } from '../../../core/validation.js';
import {
  BoolExpError,
  boolExpSchema,
  boolExpRefs,
  checkBoolExp,
  checkColumnValue,
  dquote,
  fieldOf,
  isSessionVariable,
  renameInBoolExp,
  renameTableInBoolExp,
  sourceView,
  type BoolExpRef,
  type FieldRename,
  type SourceView,
} from '../model/boolexp.js';
import { findSource, qtDisplay, qtKey, requireTable, sameTable, SourceNameSchema, updateSource, updateTable, updateTableIfPresent } from '../model/meta.js';
import type { CommandGroup, Dependent, DepTarget, Dialect, Introspection, SourceMeta, KindBinding, Metadata, PermissionMeta, QualifiedTable, SchemaRename, TableInfo, TableMeta, TableResolveContext } from '../model/types.js';
import type { DatabaseService } from '../model/service.js';

export const PERMISSION_TYPES = ['insert', 'select', 'update', 'delete'] as const;
export type PermissionType = (typeof PERMISSION_TYPES)[number];

/** The role that has every permission implicitly; permissions cannot be defined for it. */
const ADMIN_ROLE = 'admin';

const success = { message: 'success' };

const listKey = (type: PermissionType) => `${type}_permissions` as const;
const permissionsOf = (t: TableMeta, type: PermissionType): PermissionMeta[] => t[listKey(type)] ?? [];

/** Identity of a permission, both as an inconsistent object and as a dependent (types.ts `Dependent.id`). */
export const permissionId = (source: string, table: QualifiedTable, role: string, type: PermissionType) =>
  `permission@${source}:${qtKey(table)}:${role}.${type}`;

// ---------------------------------------------------------------------------------------------
// Permission shapes (request args and stored metadata)

type Columns = '*' | string[];

/** `"*"` or a list of column names (Hasura's PermColSpec). */
const ColumnsSchema = v.pipe(
  v.unknown(),
  v.rawTransform(({ dataset, addIssue, NEVER }) => {
    const x = dataset.value;
    if (x === '*') return '*' as Columns;
    if (!Array.isArray(x)) {
      addIssue({ message: `parsing [] failed, expected Array, but encountered ${jsonTypeName(x)}` });
      return NEVER;
    }
    const bad = x.findIndex((c) => typeof c !== 'string');
    if (bad >= 0) {
      addIssue({
        message: `parsing Text failed, expected String, but encountered ${jsonTypeName(x[bad])}`,
        path: [{ type: 'array', origin: 'value', input: x, key: bad, value: x[bad] }],
      });
      return NEVER;
    }
    return x as Columns;
  }),
);

const ColumnValuesSchema = v.optional(v.nullable(v.record(v.string(), v.unknown())));
const flag = v.optional(v.nullable(v.boolean()));

/** Drops absent keys (the export leaves out what is not set). */
function compact<T extends Record<string, unknown>>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, x]) => x !== undefined && x !== null)) as T;
}
const nonEmpty = <T extends object>(o: T | null | undefined) => (o && Object.keys(o).length > 0 ? o : undefined);

// Each schema turns the given permission into the shape Hasura exports (its key order, defaults
// left out); `BoolExp` is the boolean expression schema of the source kind (boolexp.ts boolExpSchema).
type BoolExpT = ReturnType<typeof boolExpSchema>;
const insertPermission = (BoolExp: BoolExpT) => v.pipe(
  v.object({
    check: BoolExp,
    set: ColumnValuesSchema,
    columns: v.optional(v.nullable(ColumnsSchema)),
    backend_only: flag,
    validate_input: v.optional(v.unknown()),
  }),
  v.transform((p) => compact({ check: p.check, set: nonEmpty(p.set), columns: p.columns, backend_only: p.backend_only || undefined, validate_input: p.validate_input })),
);

const RootFieldList = (names: string[]) =>
  v.optional(v.nullable(v.array(v.picklist(names, `expected one of ${names.map(dquote).join(', ')}`))));

const selectPermission = (BoolExp: BoolExpT) => v.pipe(
  v.object({
    columns: ColumnsSchema,
    computed_fields: v.optional(v.nullable(v.array(v.string()))),
    filter: BoolExp,
    limit: v.optional(
      v.nullable(
        v.pipe(
          v.number(),
          v.integer('parsing Int failed, expected an integer'),
          // GraphQL's Int (where the limit shows) is 32-bit. (Negative values get Hasura's message
          // when the permission is checked.)
          v.maxValue(2 ** 31 - 1, 'limit must be at most 2147483647 (a 32-bit integer)'),
        ),
      ),
    ),
    allow_aggregations: flag,
    query_root_fields: RootFieldList(['select', 'select_by_pk', 'select_aggregate']),
    subscription_root_fields: RootFieldList(['select', 'select_by_pk', 'select_aggregate', 'select_stream']),
  }),
  v.transform((p) =>
    compact({
      columns: p.columns,
      computed_fields: nonEmpty(p.computed_fields),
      filter: p.filter,
      limit: p.limit,
      allow_aggregations: p.allow_aggregations || undefined,
      query_root_fields: p.query_root_fields,
      subscription_root_fields: p.subscription_root_fields,
    }),
  ),
);

const updatePermission = (BoolExp: BoolExpT) => v.pipe(
  v.object({
    columns: ColumnsSchema,
    filter: BoolExp,
    check: v.optional(v.nullable(BoolExp)),
    set: ColumnValuesSchema,
    backend_only: flag,
    validate_input: v.optional(v.unknown()),
  }),
  v.transform((p) =>
    compact({ columns: p.columns, filter: p.filter, check: p.check, set: nonEmpty(p.set), backend_only: p.backend_only || undefined, validate_input: p.validate_input }),
  ),
);

const deletePermission = (BoolExp: BoolExpT) => v.pipe(
  v.object({ filter: BoolExp, backend_only: flag, validate_input: v.optional(v.unknown()) }),
  v.transform((p) => compact({ filter: p.filter, backend_only: p.backend_only || undefined, validate_input: p.validate_input })),
);

function makePermissionSchemas(defaultSchema: string) {
  const BoolExp = boolExpSchema(defaultSchema);
  return {
    insert: insertPermission(BoolExp),
    select: selectPermission(BoolExp),
    update: updatePermission(BoolExp),
    delete: deletePermission(BoolExp),
  } satisfies Record<PermissionType, v.GenericSchema>;
}
const permissionSchemaCache = new Map<string, ReturnType<typeof makePermissionSchemas>>();

/** The permission shape of each type, as given in requests and stored in metadata, in a source
 * whose kind's default schema is `defaultSchema` (`_exists._table`). Built once per default schema. */
export function permissionSchemas(defaultSchema: string): ReturnType<typeof makePermissionSchemas> {
  let s = permissionSchemaCache.get(defaultSchema);
  if (!s) permissionSchemaCache.set(defaultSchema, (s = makePermissionSchemas(defaultSchema)));
  return s;
}

/**
 * A table's list of permissions of one type in a metadata document (replace_metadata): each
 * permission parsed and normalised as a request's would be, one per role. Meant for
 * `TableMetaSchema` in section.ts.
 */
export function permissionsSchema(type: PermissionType, defaultSchema: string) {
  const entry = v.pipe(
    v.object({ role: nameText, permission: permissionSchemas(defaultSchema)[type], comment: optionalComment }),
    v.transform((p): PermissionMeta => (p.comment == null ? { role: p.role, permission: p.permission } : { role: p.role, permission: p.permission, comment: p.comment })),
  );
  const duplicates = (list: PermissionMeta[]) => [...new Set(list.map((p) => p.role).filter((r, i, all) => all.indexOf(r) !== i))];
  return v.optional(
    v.nullable(
      v.pipe(
        v.array(entry),
        v.check(
          (list) => duplicates(list).length === 0,
          (issue) => `multiple declarations exist for the following ${type} permissions : ${duplicates(issue.input as PermissionMeta[]).join(', ')}`,
        ),
      ),
    ),
  );
}

interface StoredPermission {
  columns?: Columns;
  computed_fields?: string[];
  filter?: Record<string, unknown>;
  check?: Record<string, unknown>;
  set?: Record<string, unknown>;
  limit?: number;
  allow_aggregations?: boolean;
  query_root_fields?: string[];
  subscription_root_fields?: string[];
  backend_only?: boolean;
}

/** A permission as Hasura shows it in an inconsistent object's definition (defaults spelt out). */
function definitionForm(type: PermissionType, p: Record<string, unknown>): Record<string, unknown> {
  switch (type) {
    case 'select':
      return { ...p, allow_aggregations: p.allow_aggregations ?? false, computed_fields: p.computed_fields ?? [] };
    default:
      return { ...p, backend_only: p.backend_only ?? false };
  }
}

// ---------------------------------------------------------------------------------------------
// Checking a permission against the live schema (build)

interface PermissionCheck {
  type: PermissionType;
  permission: Record<string, unknown>;
  table: { table: QualifiedTable; meta: TableMeta; info?: TableInfo };
  view: SourceView;
}

const VIEW_ABILITY = { insert: 'insertable', update: 'updatable', delete: 'deletable' } as const;

/** The columns a column list names (`*`: every column of the table, when known). */
function listedColumns(cols: Columns | undefined, info: TableInfo | undefined): string[] {
  if (cols === undefined) return info?.columns.map((c) => c.name) ?? [];
  return cols === '*' ? (info?.columns.map((c) => c.name) ?? []) : cols;
}

/** What a stored permission refers to; with a strict view, throws BoolExpError for the first problem. */
function permissionRefs({ type, permission, table, view }: PermissionCheck): BoolExpRef[] {
  // Stored names are qualified: without the kind's dialect (its plugin is disabled) none is unqualified.
  const defaultSchema = view.dialect?.defaultSchema ?? '';
  const parsed = v.safeParse(permissionSchemas(defaultSchema)[type], permission);
  if (!parsed.success) {
    if (view.strict) throw new BoolExpError(parsed.issues[0].message);
    return [];
  }
  const p = parsed.output as StoredPermission;
  const qt = table.table;
  const refs: BoolExpRef[] = [];
  const fail = (message: string) => {
    if (view.strict) throw new BoolExpError(message);
  };
  const exp = (e: unknown) => refs.push(...(view.strict ? checkBoolExp(e, qt, view) : boolExpRefs(e, qt, view)));
  const column = (name: string, hint: string): boolean => {
    const f = fieldOf(view, table, name);
    if (!f) fail(`column ${dquote(name)} does not exist`);
    else if (f.kind !== 'column') fail(`expecting a database column; but, ${dquote(name)} is a ${f.kind === 'relationship' ? 'relationship' : 'computed field'}; ${hint}`);
    else return true;
    return false;
  };
  const columns = (cols: Columns | undefined, hint: string) => {
    for (const c of listedColumns(cols, table.info)) if (column(c, hint)) refs.push({ kind: 'column', table: qt, column: c, onType: false });
  };
  const presets = () => {
    for (const [c, val] of Object.entries(p.set ?? {})) {
      if (!column(c, `column ${dquote(c)} not found in table ${dquote(qtDisplay(qt, defaultSchema))}`)) continue;
      const type = table.info?.columns.find((x) => x.name === c);
      if (type) checkColumnValue(type, val, view);
      refs.push({ kind: 'column', table: qt, column: c, onType: !isSessionVariable(val) });
    }
  };

  if (type !== 'select' && table.info?.viewInfo) {
    const vi = table.info.viewInfo;
    if (!{ insert: vi.insertable, update: vi.updatable, delete: vi.deletable }[type]) fail(`view ${dquote(qtDisplay(qt, defaultSchema))} is not ${VIEW_ABILITY[type]}`);
  }
  switch (type) {
    case 'insert':
      exp(p.check);
      presets();
      columns(p.columns, '');
      break;
    case 'select':
      exp(p.filter);
      columns(p.columns, 'permissions for relationships are automatically inferred');
      for (const name of p.computed_fields ?? []) {
        const f = fieldOf(view, table, name);
        if (!f || (f.kind === 'computed_field' && !f.result)) fail(`computed field ${dquote(name)} does not exist`);
        else if (f.kind !== 'computed_field') fail(`expecting a computed field; but, ${dquote(name)} is a ${f.kind === 'column' ? 'column' : 'relationship'}`);
        else if (f.result?.table) {
          fail(
            `select permissions on computed field ${dquote(name)} are auto-derived from the permissions on its returning table ${dquote(qtDisplay(f.result.table, defaultSchema))} and cannot be specified manually`,
          );
        }
        if (f?.kind === 'computed_field') refs.push({ kind: 'computed_field', table: qt, name });
      }
      if (p.limit !== undefined && p.limit < 0) fail('unexpected negative value');
      if (!p.allow_aggregations && [...(p.query_root_fields ?? []), ...(p.subscription_root_fields ?? [])].includes('select_aggregate')) {
        fail('The "select_aggregate" root field can only be enabled in the query_root_fields or the subscription_root_fields when "allow_aggregations" is set to true');
      }
      break;
    case 'update':
      exp(p.filter);
      if (p.check) exp(p.check);
      presets();
      columns(p.columns, "relationships can't be used in update");
      break;
    case 'delete':
      exp(p.filter);
      break;
  }
  return refs;
}

// ---------------------------------------------------------------------------------------------
// References of a table's permissions, for dependency lookups

/*
 * Note [Cached permission references]
 * Every dependency lookup (untrack_table, drop_relationship, run_sql drops...) asks what every
 * permission of the source refers to. Finding out parses the permission and walks its boolean
 * expressions, which costs far more than the lookup itself; done for every permission on every
 * lookup, an operation would cost in proportion to the size of the metadata. So the references
 * of a table's permissions are kept per (immutable, Note [Sharing]) table entry together with
 * everything the walk read besides the entry itself: the introspection, and the entries of the
 * tables it looked up by name (through relationships, `_exists`, computed fields), absent ones
 * included. They are reused while all of those are the same objects, which is exactly when the
 * walk would find the same references again.
 */
interface TableRefs {
  intro: Introspection | undefined;
  /** The tables the walk looked up, and the entry each lookup found. */
  seen: Map<string, TableMeta | undefined>;
  /** References of each permission, by PERMISSION_TYPES index and then list position. */
  perType: BoolExpRef[][][];
  /** Keys of the tables the references are on: a lookup for another table can skip this one. */
  tables: Set<string>;
}
const refsCache = new WeakMap<TableMeta, TableRefs>();
/** Whether every lookup of a walk would find the same entry through `entry`. */
function unchanged(seen: TableRefs['seen'], entry: (key: string) => TableMeta | undefined): boolean {
  for (const [key, meta] of seen) if (entry(key) !== meta) return false;
  return true;
}

/** What each permission of `t` refers to, as far as the metadata and the introspection tell
 * (Note [Cached permission references]). */
function tableRefs(t: TableMeta, entry: (key: string) => TableMeta | undefined, intro: Introspection | undefined, dialect: Dialect | undefined): TableRefs {
  const cached = refsCache.get(t);
  if (cached && cached.intro === intro && unchanged(cached.seen, entry)) return cached;
  const seen: TableRefs['seen'] = new Map();
  const view: SourceView = {
    table: (qt) => {
      const key = qtKey(qt);
      const meta = entry(key);
      seen.set(key, meta);
      return meta && { meta, info: intro?.tables.get(key) };
    },
    functions: intro?.functions,
    strict: false,
    dialect,
  };
  const info = intro?.tables.get(qtKey(t.table));
  const perType = PERMISSION_TYPES.map((type) =>
    permissionsOf(t, type).map((p) => permissionRefs({ type, permission: p.permission, table: { table: t.table, meta: t, info }, view })),
  );
  const tables = new Set([qtKey(t.table)]);
  for (const list of perType) for (const refs of list) for (const r of refs) tables.add(qtKey(r.table));
  const refs = { intro, seen, perType, tables };
  refsCache.set(t, refs);
  return refs;
}

// ---------------------------------------------------------------------------------------------
// Renames

/** Rewrites one permission for a renamed column, relationship or computed field; returns it
 * unchanged (same object) when it does not refer to it. */
function renamePermission(p: Record<string, unknown>, table: QualifiedTable, rn: FieldRename, view: SourceView): Record<string, unknown> {
  const here = sameTable(table, rn.table);
  let out = p;
  const set = (key: string, val: unknown) => {
    if (val !== out[key]) out = { ...out, [key]: val };
  };
  const renameList = (key: string, kind: FieldRename['kind']) => {
    const list = out[key];
    if (here && rn.kind === kind && Array.isArray(list) && list.includes(rn.from)) set(key, list.map((c) => (c === rn.from ? rn.to : c)));
  };
  renameList('columns', 'column');
  renameList('computed_fields', 'computed_field');
  const preset = out.set;
  if (here && rn.kind === 'column' && preset && typeof preset === 'object' && Object.hasOwn(preset, rn.from)) {
    set('set', Object.fromEntries(Object.entries(preset).map(([k, val]) => [k === rn.from ? rn.to : k, val])));
  }
  for (const key of ['filter', 'check']) if (out[key] !== undefined) set(key, renameInBoolExp(out[key], table, rn, view));
  return out;
}

/** Applies `fn` to every permission of a source, keeping untouched parts of `md` by reference. */
function mapPermissions(md: Metadata, sourceName: string, fn: (permission: Record<string, unknown>, table: TableMeta) => Record<string, unknown>): Metadata {
  const source = findSource(md, sourceName);
  if (!source) return md;
  let changed = false;
  const tables = source.tables.map((t) => {
    let next = t;
    for (const type of PERMISSION_TYPES) {
      const list = permissionsOf(t, type);
      const updated = list.map((p) => {
        const perm = fn(p.permission, t);
        return perm === p.permission ? p : { ...p, permission: perm };
      });
      if (updated.some((p, i) => p !== list[i])) next = { ...next, [listKey(type)]: updated };
    }
    if (next !== t) changed = true;
    return next;
  });
  return changed ? updateSource(md, sourceName, (s) => ({ ...s, tables })) : md;
}

/**
 * Rewrites every permission of a source for a renamed column, relationship or computed field
 * (columns lists, `set` presets, `computed_fields`, and filters/checks of any table that reach it
 * through relationships or `_exists`). Call it before the renamed object itself is renamed in
 * `md`, so that relationships still resolve under their old names; `intro` (when available)
 * resolves the remote tables of foreign-key object relationships.
 */
export function renameInPermissions(
  md: Metadata,
  sourceName: string,
  rn: FieldRename,
  intro: Introspection | null | undefined,
  dialect: Dialect | undefined,
): Metadata {
  const source = findSource(md, sourceName);
  if (!source) return md;
  const view = sourceView(source.tables, intro, false, dialect);
  return mapPermissions(md, sourceName, (p, t) => renamePermission(p, t.table, rn, view));
}

// ---------------------------------------------------------------------------------------------
// The command group

export function permissionsGroup(db: DatabaseService): CommandGroup {
  const committedIntro = (source: string) => db.committed().sources.get(source)?.introspection;
  // Lookups outside a build may meet a source whose kind's plugin is disabled.
  const dialectOf = (source: SourceMeta | undefined) => (source ? db.kinds.get(source.kind)?.dialect : undefined);

  const notExists = (type: PermissionType, table: QualifiedTable, role: string, defaultSchema: string) =>
    new SvcError('permission-error', `${type} permission on ${dquote(qtDisplay(table, defaultSchema))} for role ${dquote(role)} does not exist`, { path: '$.args' });

  function operations(bind: KindBinding): OperationDef[] {
    const ops: OperationDef[] = [];
    const defaultSchema = bind.kind.dialect.defaultSchema;
    const schemas = permissionSchemas(defaultSchema);
    for (const type of PERMISSION_TYPES) {
      const createArgs = v.object({
        table: bind.table,
        role: nameText,
        permission: schemas[type],
        comment: optionalComment,
        source: SourceNameSchema,
      });
      const create = (a: v.InferOutput<typeof createArgs>, ctx: OperationContext) => {
        const t = requireTable(ctx.metadata, a.source, a.table, defaultSchema, '$.args');
        // Hasura words the admin role's implicit permission as an existing one.
        if (a.role === ADMIN_ROLE || permissionsOf(t, type).some((p) => p.role === a.role)) {
          throw new SvcError('already-exists', `${type} permission already defined on table ${dquote(bind.display(a.table))} with role ${dquote(a.role)}`, { path: '$.args' });
        }
        const entry: PermissionMeta = { role: a.role, permission: a.permission as Record<string, unknown> };
        if (a.comment != null) entry.comment = a.comment;
        return {
          metadata: updateTable(ctx.metadata, a.source, a.table, defaultSchema, (x) => ({ ...x, [listKey(type)]: [...permissionsOf(x, type), entry] })),
          response: success,
          defines: [permissionId(a.source, a.table, a.role, type)],
        };
      };
      ops.push({ type: bind.name(`create_${type}_permission`), legacy: bind.legacy(`create_${type}_permission`), args: createArgs, mutates: true, run: create });

      const dropArgs = v.object({ table: bind.table, role: nameText, source: SourceNameSchema });
      const drop = (a: v.InferOutput<typeof dropArgs>, ctx: OperationContext) => {
        const t = requireTable(ctx.metadata, a.source, a.table, defaultSchema, '$.args');
        if (!permissionsOf(t, type).some((p) => p.role === a.role)) throw notExists(type, a.table, a.role, defaultSchema);
        return {
          metadata: updateTable(ctx.metadata, a.source, a.table, defaultSchema, (x) => ({ ...x, [listKey(type)]: permissionsOf(x, type).filter((p) => p.role !== a.role) })),
          response: success,
        };
      };
      ops.push({ type: bind.name(`drop_${type}_permission`), legacy: bind.legacy(`drop_${type}_permission`), args: dropArgs, mutates: true, run: drop });
    }

    const commentArgs = v.object({
      table: bind.table,
      role: nameText,
      type: v.picklist(PERMISSION_TYPES, `perm_type should be one of ${PERMISSION_TYPES.map((x) => `'${x}'`).join(', ')}`),
      comment: optionalComment,
      source: SourceNameSchema,
    });
    const setComment = (a: v.InferOutput<typeof commentArgs>, ctx: OperationContext) => {
      const t = requireTable(ctx.metadata, a.source, a.table, defaultSchema, '$.args');
      if (!permissionsOf(t, a.type).some((p) => p.role === a.role)) throw notExists(a.type, a.table, a.role, defaultSchema);
      const withComment = (p: PermissionMeta): PermissionMeta => {
        const { comment: _old, ...rest } = p;
        return a.comment == null ? rest : { ...rest, comment: a.comment };
      };
      return {
        metadata: updateTable(ctx.metadata, a.source, a.table, defaultSchema, (x) => ({
          ...x,
          [listKey(a.type)]: permissionsOf(x, a.type).map((p) => (p.role === a.role ? withComment(p) : p)),
        })),
        response: success,
      };
    };
    ops.push({ type: bind.name('set_permission_comment'), legacy: bind.legacy('set_permission_comment'), args: commentArgs, mutates: true, run: setComment });
    return ops;
  }

  function resolveTable(ctx: TableResolveContext): void {
    const view: SourceView = {
      table: (qt) => ctx.tracked.get(qtKey(qt)),
      functions: ctx.introspection.functions,
      strict: true,
      dialect: ctx.kind.dialect,
    };
    const own = ctx.table.table;
    const source = ctx.source.name;
    const defaultSchema = ctx.kind.dialect.defaultSchema;
    for (const type of PERMISSION_TYPES) {
      for (const p of permissionsOf(ctx.table, type)) {
        try {
          const refs = permissionRefs({ type, permission: p.permission, table: { table: own, meta: ctx.table, info: ctx.info }, view });
          for (const r of refs) if (!sameTable(r.table, own)) ctx.dependsOn(qtKey(r.table));
        } catch (e) {
          if (!(e instanceof BoolExpError)) throw e;
          ctx.report({
            type: `${type}_permission`,
            name: `${type}_permission ${p.role} in table ${qtDisplay(own, defaultSchema)} in source ${source}`,
            reason: `Inconsistent object: in table ${dquote(qtDisplay(own, defaultSchema))}: in permission for role ${dquote(p.role)}: ${e.message}`,
            definition: { source, table: own, role: p.role, permission: definitionForm(type, p.permission), comment: p.comment ?? null },
            id: permissionId(source, own, p.role, type),
            remove: (md) => updateTableIfPresent(md, source, own, (x) => ({ ...x, [listKey(type)]: permissionsOf(x, type).filter((q) => q.role !== p.role) })),
          });
        }
      }
    }
  }

  /** Whether a permission's references hit `target`, and whether through the column's type. */
  function hits(target: DepTarget, refs: BoolExpRef[], own: QualifiedTable): { hit: boolean; onType: boolean } {
    let hit = false;
    let onType = false;
    if (target.kind === 'table' && sameTable(target.table, own)) hit = true;
    for (const r of refs) {
      if (target.kind === 'function' || target.kind === 'foreign_key' || !sameTable(r.table, target.table)) continue;
      if (target.kind === 'table' ? r.kind === 'table' : target.kind === 'column' ? r.kind === 'column' && r.column === target.column : r.kind === target.kind && r.name === target.name) {
        hit = true;
        if (r.kind === 'column' && r.onType) onType = true;
      }
    }
    return { hit, onType };
  }

  function dependents(md: Metadata, target: DepTarget): Dependent[] {
    const source = findSource(md, target.source);
    if (!source || target.kind === 'function' || target.kind === 'foreign_key') return [];
    const intro = committedIntro(source.name) ?? undefined;
    const targetKey = qtKey(target.table);
    // The entries that may refer to the table, not every one (Note [Dependents through the build]).
    const reach = db.tablesReaching(source, targetKey);
    const dialect = dialectOf(source);
    const out: Dependent[] = [];
    for (const t of reach.tables) {
      const refs = tableRefs(t, reach.entry, intro, dialect);
      if (!refs.tables.has(targetKey)) continue;
      PERMISSION_TYPES.forEach((type, ti) => {
        permissionsOf(t, type).forEach((p, i) => {
          // A column list of `*` depends on every column (Hasura expands it), even one the introspection does not know yet.
          const star = target.kind === 'column' && sameTable(target.table, t.table) && p.permission.columns === '*';
          const { hit, onType } = hits(target, refs.perType[ti]![i]!, t.table);
          if (!hit && !star) return;
          out.push({
            id: permissionId(source.name, t.table, p.role, type),
            description: `permission ${qtDisplay(t.table, dialect?.defaultSchema ?? '')}.${p.role}.${type} in source ${dquote(source.name)}`,
            onType: onType || undefined,
            remove: (m) => updateTableIfPresent(m, source.name, t.table, (x) => ({ ...x, [listKey(type)]: permissionsOf(x, type).filter((q) => q.role !== p.role) })),
          });
        });
      });
    }
    return out;
  }

  function rename(md: Metadata, r: SchemaRename): Metadata {
    if (r.kind === 'table') {
      const defaultSchema = dialectOf(findSource(md, r.source))?.defaultSchema;
      return mapPermissions(md, r.source, (p) => {
        let out = p;
        for (const key of ['filter', 'check']) {
          const exp = out[key] === undefined ? undefined : renameTableInBoolExp(out[key], r.from, r.to, defaultSchema);
          if (exp !== out[key]) out = { ...out, [key]: exp };
        }
        return out;
      });
    }
    if (r.kind === 'column') {
      const rn = { kind: 'column' as const, table: r.table, from: r.from, to: r.to };
      return renameInPermissions(md, r.source, rn, committedIntro(r.source), dialectOf(findSource(md, r.source)));
    }
    return md;
  }

  return { name: 'permissions', operations, resolveTable, dependents, rename };
}
