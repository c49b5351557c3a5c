/**
 * Command group: computed fields. `<prefix>_add_computed_field` / `_drop_computed_field` (legacy
 * `add_computed_field`, `drop_computed_field`). In the build it checks every computed field against
 * its SQL function (Hasura's `buildComputedFieldInfo`) and the table's other fields, and it reports
 * the computed fields that depend on a function.
 */
import * as v from '../../../core/valibot.js';
import { SvcError } from '../../../core/errors.js';
import type { OperationDef } from '../../../core/plugin.js';
import { nameText, optionalComment } from '../../../core/validation.js';
import type {
  CommandGroup,
  ComputedFieldMeta,
  Dialect,
  Dependent,
  FunctionArgInfo,
  FunctionInfo,
  Introspection,
  KindBinding,
  Metadata,
  QualifiedTable,
  TableInfo,
  TableMeta,
  TableResolveContext,
} from '../model/types.js';
import { qtDisplay, qtKey, requireTable, sameTable, sourcesOf, SourceNameSchema, updateTable, updateTableIfPresent } from '../model/meta.js';
import { argType, isGraphQLName, quoted, reasonMessage, returnTable, singleOverload } from './functions.js';
import type { DatabaseService } from '../model/service.js';

const success = { message: 'success' };

/** Identity of a computed field's inconsistency (what add_computed_field `defines`). */
const objectId = (source: string, table: QualifiedTable, name: string) => `computed_field:${source}:${qtKey(table)}:${name}`;

function withoutComputedField(t: TableMeta, name: string): TableMeta {
  return { ...t, computed_fields: (t.computed_fields ?? []).filter((c) => c.name !== name) };
}

/** What a computed field returns: rows of a table, or a scalar. */
export type ComputedFieldReturn = { table: QualifiedTable } | { scalar: string };

/**
 * Checks a computed field's definition against its function (Hasura's `buildComputedFieldInfo`):
 * what it returns, or the reasons it cannot be added. `trackedTables` are the keys of the tracked
 * (and consistent) tables of the source.
 */
export function checkComputedField(
  table: QualifiedTable,
  cf: ComputedFieldMeta,
  fn: FunctionInfo,
  intro: Introspection,
  isTracked: (key: string) => boolean,
  dialect: Dialect,
): { returns: ComputedFieldReturn } | { reasons: string[] } {
  const qf = cf.definition.function;
  const reasons: string[] = [];
  if (!isGraphQLName(cf.name)) reasons.push(`"${cf.name}" is not valid GraphQL name`);
  if (fn.volatility === 'volatile') reasons.push(`the function ${quoted(qf, dialect.defaultSchema)} is of type VOLATILE; cannot be added as a computed field`);
  let returns: ComputedFieldReturn;
  const rowsOf = returnTable(intro, fn);
  if (rowsOf) {
    if (!isTracked(qtKey(rowsOf))) reasons.push(`the function ${quoted(qf, dialect.defaultSchema)} returning set of table ${quoted(rowsOf, dialect.defaultSchema)} is not tracked or not found in database`);
    returns = { table: rowsOf };
  } else {
    // An array of a base type is BASE to PostgreSQL (typtype 'b'), and to Hasura.
    if (fn.returnTypeKind !== 'base' && fn.returnTypeKind !== 'array') reasons.push(`the function ${quoted(qf, dialect.defaultSchema)} returning type ${fn.returnType} is not a BASE type`);
    returns = { scalar: fn.returnType };
  }
  const checkTableArg = (label: string, arg: FunctionArgInfo) => {
    if (arg.typeKind !== 'composite') reasons.push(`${label} is not COMPOSITE type`);
    const argType = { schema: arg.typeSchema, name: arg.type };
    if (!sameTable(argType, table)) reasons.push(`${label} of type ${quoted(argType, dialect.defaultSchema)} is not the table to which the computed field is being added`);
  };
  // A missing named argument stops the checks (Hasura `refute`s there).
  const notAnArgument = (name: string) => {
    reasons.push(`"${name}" is not an input argument of the function ${quoted(qf, dialect.defaultSchema)}`);
    return { reasons };
  };
  const tableArgument = cf.definition.table_argument;
  if (tableArgument != null) {
    const arg = fn.args.find((a) => a.name === tableArgument);
    if (!arg) return notAnArgument(tableArgument);
    checkTableArg(`"${tableArgument}" argument of the function ${quoted(qf, dialect.defaultSchema)}`, arg);
  } else if (fn.args.length === 0) {
    reasons.push(`the function ${quoted(qf, dialect.defaultSchema)} has no input arguments`);
  } else {
    checkTableArg(`first argument of the function ${quoted(qf, dialect.defaultSchema)}`, fn.args[0]!);
  }
  const sessionArgument = cf.definition.session_argument;
  if (sessionArgument != null) {
    const arg = fn.args.find((a) => a.name === sessionArgument);
    if (!arg) return notAnArgument(sessionArgument);
    if (!dialect.sessionArgument(argType(arg), 'computed_field')) {
      reasons.push(`"${sessionArgument}" argument of the function ${quoted(qf, dialect.defaultSchema)} is not of type JSON`);
    }
  }
  return reasons.length > 0 ? { reasons } : { returns };
}

/** Why a computed field's name clashes with another field of the table (Hasura's field conflicts). */
function fieldConflict(t: TableMeta, info: TableInfo, name: string): string | undefined {
  const relationships = [...(t.object_relationships ?? []), ...(t.array_relationships ?? [])];
  if (relationships.some((r) => r.name === name)) return `conflicting definitions for field "${name}"`;
  const config = t.configuration ?? {};
  for (const c of info.columns) {
    const custom = config.column_config?.[c.name]?.custom_name ?? config.custom_column_names?.[c.name];
    if (custom === name && c.name !== name) return `field definition conflicts with custom field name for postgres column "${c.name}"`;
  }
  if (info.columns.some((c) => c.name === name)) return 'field definition conflicts with postgres column';
  return undefined;
}

function resolveTable(ctx: TableResolveContext): void {
  const table = ctx.table.table;
  const source = ctx.source.name;
  const defaultSchema = ctx.kind.dialect.defaultSchema;
  for (const cf of ctx.table.computed_fields ?? []) {
    const report = (reason: string) =>
      ctx.report({
        type: 'computed_field',
        name: `computed_field ${cf.name} in table ${qtDisplay(table, defaultSchema)} in source ${source}`,
        reason: `Inconsistent object: ${reason}`,
        definition: { source, table, name: cf.name, definition: cf.definition, comment: cf.comment ?? null },
        id: objectId(source, table, cf.name),
        remove: (md) => updateTableIfPresent(md, source, table, (t) => withoutComputedField(t, cf.name)),
      });
    const context = `in table ${quoted(table, defaultSchema)}: in computed field "${cf.name}": `;
    const fn = singleOverload(ctx.introspection, cf.definition.function, defaultSchema);
    if (typeof fn === 'string') {
      report(context + fn);
      continue;
    }
    const checked = checkComputedField(table, cf, fn, ctx.introspection, (key) => ctx.tracked.get(key)?.info !== undefined, ctx.kind.dialect);
    if ('reasons' in checked) {
      report(`${context}the computed field "${cf.name}" cannot be added to table ${quoted(table, defaultSchema)} ${reasonMessage(checked.reasons)}`);
      continue;
    }
    if ('table' in checked.returns) ctx.dependsOn(qtKey(checked.returns.table));
    const conflict = fieldConflict(ctx.table, ctx.info, cf.name);
    if (conflict) report(conflict);
  }
}

const addArgs = (bind: KindBinding) =>
  v.object({
    table: bind.table,
    name: nameText,
    definition: v.object({
      function: bind.function,
      table_argument: v.nullish(nameText),
      session_argument: v.nullish(nameText),
    }),
    comment: optionalComment,
    source: SourceNameSchema,
  });

const dropArgs = (bind: KindBinding) =>
  v.object({
    table: bind.table,
    name: nameText,
    cascade: v.optional(v.boolean(), false),
    source: SourceNameSchema,
  });

export function computedFieldsGroup(db: DatabaseService): CommandGroup {
  const add = (bind: KindBinding): OperationDef<v.InferOutput<ReturnType<typeof addArgs>>>['run'] => (a, ctx) => {
    const defaultSchema = bind.kind.dialect.defaultSchema;
    const table = requireTable(ctx.metadata, a.source, a.table, defaultSchema);
    if ((table.computed_fields ?? []).some((c) => c.name === a.name)) {
      throw new SvcError('already-exists', `computed field "${a.name}" already exists in table ${quoted(a.table, defaultSchema)}`, { path: '$.args.name' });
    }
    const definition: ComputedFieldMeta['definition'] = { function: a.definition.function };
    if (a.definition.table_argument != null) definition.table_argument = a.definition.table_argument;
    if (a.definition.session_argument != null) definition.session_argument = a.definition.session_argument;
    const entry: ComputedFieldMeta = { name: a.name, definition };
    if (a.comment != null) entry.comment = a.comment;
    return {
      metadata: updateTable(ctx.metadata, a.source, a.table, defaultSchema, (t) => ({ ...t, computed_fields: [...(t.computed_fields ?? []), entry] })),
      response: success,
      defines: [objectId(a.source, a.table, a.name)],
    };
  };

  const drop = (bind: KindBinding): OperationDef<v.InferOutput<ReturnType<typeof dropArgs>>>['run'] => (a, ctx) => {
    const table = requireTable(ctx.metadata, a.source, a.table, bind.kind.dialect.defaultSchema);
    if (!(table.computed_fields ?? []).some((c) => c.name === a.name)) {
      throw new SvcError('not-exists', `computed field "${a.name}" does not exist`, { path: '$.args.name' });
    }
    let md = db.cascade(ctx.metadata, { kind: 'computed_field', source: a.source, table: a.table, name: a.name }, a.cascade);
    md = updateTableIfPresent(md, a.source, a.table, (t) => withoutComputedField(t, a.name));
    return { metadata: md, response: success };
  };

  return {
    name: 'computed-fields',
    operations(bind: KindBinding): OperationDef[] {
      return [
        { type: bind.name('add_computed_field'), legacy: bind.legacy('add_computed_field'), args: addArgs(bind), mutates: true, run: add(bind) },
        { type: bind.name('drop_computed_field'), legacy: bind.legacy('drop_computed_field'), args: dropArgs(bind), mutates: true, run: drop(bind) },
      ];
    },

    resolveTable,

    /** The computed fields computed by a function (run_sql dropping or replacing it). */
    dependents(md: Metadata, target): Dependent[] {
      if (target.kind !== 'function') return [];
      const source = sourcesOf(md).find((s) => s.name === target.source);
      const defaultSchema = (source && db.defaultSchemaOf(source)) ?? '';
      const out: Dependent[] = [];
      for (const t of source?.tables ?? []) {
        for (const cf of t.computed_fields ?? []) {
          if (!sameTable(cf.definition.function, target.function)) continue;
          out.push({
            id: `computed_field@${target.source}:${qtKey(t.table)}:${cf.name}`,
            description: `computed field ${qtDisplay(t.table, defaultSchema)}.${cf.name} in source "${target.source}"`,
            remove: (m) => updateTableIfPresent(m, target.source, t.table, (x) => withoutComputedField(x, cf.name)),
            target: { kind: 'computed_field', source: target.source, table: t.table, name: cf.name },
          });
        }
      }
      return out;
    },
  };
}
