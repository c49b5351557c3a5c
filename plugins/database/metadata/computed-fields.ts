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

/** What a computed field returns: rows of a table, a scalar, or rows of the columns its table
 * function declares (Note [Computed fields by argument mapping]). */
export type ComputedFieldReturn = { table: QualifiedTable } | { scalar: string } | { columns: { name: string; type: string }[] };

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

/*
 * Note [Computed fields by argument mapping]
 * A kind whose dialect says `computedFieldArguments: 'mapping'` (BigQuery) has Hasura's BigQuery
 * computed fields: a table-valued function (FunctionInfo.kind 't') called with some of its
 * arguments each given a column of the row (`argument_mapping: {arg: column}`), the others the
 * user's (`args`), and returning the rows of a tracked table (`return_table`). The definition is
 * `{function, argument_mapping, return_table?}` (no `table_argument`, `session_argument`), and it
 * is checked as Hasura's `buildComputedFieldInfo` for BigQuery does (its messages, all the
 * reasons that it gathers): the function must be a table-valued function with named and typed
 * arguments, every mapped argument an argument of it and every mapped column a column of the
 * table; a function that declares its result columns (`RETURNS TABLE<...>`) must not be given
 * `return_table`, and one that declares none must be. The call is compiled with named arguments,
 * the mapped ones the parent row's columns (FunctionCallIR `column` arguments).
 *
 * A function that declares its columns is served as Hasura's BigQuery backend serves it (its
 * `ReturnTableSchema`): every declared column must have a name that is a GraphQL name and a type
 * (Hasura's reasons otherwise), and the field's rows are objects of a type of their own, named
 * `<computed field>__fields` (the source's type-name customization applied) and described
 * `column fields returning by "<computed field>"`, one nullable field per column, in the
 * declared order, typed by the column's scalar (FunctionInfo.returnColumns; ResolvedComputedField
 * `columns`). The field takes `args` only (no where, order_by, limit, offset, distinct_on), no
 * table's permission applies to the rows, and it is not in boolean expressions or order_by. A
 * role sees it when its select permission on the table lists it in `computed_fields` (which
 * such a computed field may be, unlike one returning a table's rows); admin always. Where Svc
 * departs: Hasura types the field as a single nullable object while it answers a list of the
 * rows, Svc types it `[<computed field>__fields!]!`, as it answers; an inherited role whose
 * parents do not all list it would need its rows hidden row by row (Note [Inherited roles] in
 * model/inherit.ts), which Hasura does not do for it, so Svc does not show it to such a role;
 * and since the type is named after the computed field alone, one of the same name with other
 * columns (another table's) is refused when selected rather than answered under the type of the
 * one that made it (schema/role.ts `computedColumns`).
 */

/** Checks a computed field by argument mapping (Note [Computed fields by argument mapping]). */
export function checkMappedComputedField(
  table: QualifiedTable,
  columns: readonly string[],
  cf: ComputedFieldMeta,
  fn: FunctionInfo,
  isTracked: (key: string) => boolean,
  dialect: Dialect,
): { returns: ComputedFieldReturn } | { reasons: string[] } {
  const qf = quoted(cf.definition.function, dialect.defaultSchema);
  const reasons: string[] = [];
  if (!isGraphQLName(cf.name)) reasons.push(`"${cf.name}" is not valid GraphQL name`);
  if (fn.kind !== 't') reasons.push(`function ${qf} is not a TABLE_VALUED_FUNCTION`);
  // Hasura stops (`refute`) at a function without arguments, or an argument without a name or type.
  if (fn.args.length === 0) return { reasons: [...reasons, `function ${qf} has no input arguments defined`] };
  for (const a of fn.args) {
    if (a.name === null || a.name === '') return { reasons: [...reasons, `function ${qf} has at least one argument without name`] };
    if (a.type === '') return { reasons: [...reasons, `argument "${a.name}" has no data type defined in the function ${qf}`] };
  }
  for (const [arg, column] of Object.entries(cf.definition.argument_mapping ?? {})) {
    if (!fn.args.some((a) => a.name === arg)) reasons.push(`the argument "${arg}" is not one of function ${qf} input arguments`);
    if (!columns.includes(column)) reasons.push(`the column "${column}" does not exist in table ${quoted(table, dialect.defaultSchema)}`);
  }
  const rows = cf.definition.return_table;
  if (fn.returnColumns) {
    if (rows) return { reasons: [...reasons, `return table ${quoted(rows, dialect.defaultSchema)} is not required as the function ${qf} returns arbitrary column fields`] };
    // Hasura stops at the first column without a name, a GraphQL name or a type.
    for (const c of fn.returnColumns) {
      if (c.name === '') return { reasons: [...reasons, 'at least one field name is absent'] };
      if (!isGraphQLName(c.name)) return { reasons: [...reasons, `fieldName "${c.name}" is not a valid GraphQL name`] };
      // Hasura's name check lets it by, and then no valid schema has the field.
      if (c.name.startsWith('__')) return { reasons: [...reasons, `fieldName "${c.name}" begins with "__", which GraphQL reserves for introspection`] };
      if (c.type === '') return { reasons: [...reasons, `fieldName "${c.name}" has not type information`] };
    }
    return reasons.length > 0 ? { reasons } : { returns: { columns: fn.returnColumns } };
  }
  if (!rows) return { reasons: [...reasons, `function ${qf} is not defined with 'RETURNS TABLE'. Expecting return table name.`] };
  if (!isTracked(qtKey(rows))) return { reasons: [...reasons, `function ${qf} returning set of table ${quoted(rows, dialect.defaultSchema)} is not tracked`] };
  return reasons.length > 0 ? { reasons } : { returns: { table: rows } };
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
    const isTracked = (key: string) => ctx.tracked.get(key)?.info !== undefined;
    const checked =
      ctx.kind.dialect.computedFieldArguments === 'mapping'
        ? checkMappedComputedField(table, ctx.info.columns.map((c) => c.name), cf, fn, isTracked, ctx.kind.dialect)
        : checkComputedField(table, cf, fn, ctx.introspection, isTracked, ctx.kind.dialect);
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
    definition:
      bind.kind.dialect.computedFieldArguments === 'mapping'
        ? // Hasura's BigQuery ComputedFieldDefinition (Note [Computed fields by argument mapping]).
          v.strictObject({
            function: bind.function,
            argument_mapping: v.record(nameText, nameText),
            return_table: v.optional(bind.table),
          })
        : v.object({
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
    const given = a.definition as ComputedFieldMeta['definition'];
    const definition: ComputedFieldMeta['definition'] = { function: given.function };
    if (given.table_argument != null) definition.table_argument = given.table_argument;
    if (given.session_argument != null) definition.session_argument = given.session_argument;
    if (given.argument_mapping !== undefined) definition.argument_mapping = given.argument_mapping;
    if (given.return_table !== undefined) definition.return_table = given.return_table;
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
