/**
 * Command group: SQL functions. `<prefix>_track_function` / `_untrack_function` (legacy
 * `track_function` v1 and v2, `untrack_function`) and `_create_function_permission` /
 * `_drop_function_permission`. In the build it resolves every tracked function against the
 * source's introspection (Hasura's `buildFunctionInfo`), and it reports the tracked functions that
 * depend on a function or on a function's return table.
 */
import * as v from '../../../core/valibot.js';
import { SvcError } from '../../../core/errors.js';
import type { OperationDef } from '../../../core/plugin.js';
import { GraphQLNameSchema, isGraphQLName, nameText, optionalComment } from '../../../core/validation.js';
import type {
  ColumnType,
  Dialect,
  FunctionArgInfo,
  CommandGroup,
  Dependent,
  FunctionInfo,
  FunctionMeta,
  FunctionResolveContext,
  Introspection,
  KindBinding,
  Metadata,
  QualifiedFunction,
  QualifiedTable,
  SourceMeta,
} from '../model/types.js';
import { findFunction, findSource, findTable, qtDisplay, qtKey, requireSource, sameTable, sourcesOf, SourceNameSchema, updateSource } from '../model/meta.js';
import type { DatabaseService } from '../model/service.js';

const success = { message: 'success' };

// ---------------------------------------------------------------------------------------------
// Helpers shared with computed fields

/** `"name"`, or `"schema.name"` outside the source kind's default schema: how Hasura quotes a
 * qualified name in messages. */
export const quoted = (qt: QualifiedTable, defaultSchema: string) => `"${qtDisplay(qt, defaultSchema)}"`;

export { isGraphQLName };

/** Hasura's `makeReasonMessage`: one reason inline, several as a bulleted list. */
export function reasonMessage(reasons: string[]): string {
  if (reasons.length === 1) return `because ${reasons[0]}`;
  return `for the following reasons:\n${reasons.map((r) => `  • ${r}\n`).join('')}`;
}

/** The one definition of a function in the source, or the reason there is none. */
export function singleOverload(intro: Introspection, qf: QualifiedFunction, defaultSchema: string): FunctionInfo | string {
  const overloads = intro.functions.get(qtKey(qf)) ?? [];
  if (overloads.length === 0) return `no such function exists: ${quoted(qf, defaultSchema)}`;
  if (overloads.length > 1) return `function ${quoted(qf, defaultSchema)} is overloaded. Overloaded functions are not supported`;
  return overloads[0]!;
}

/** An argument's type, as dialects see types. */
export const argType = (arg: FunctionArgInfo): ColumnType => ({ type: arg.type, udt: arg.type, typeSchema: arg.typeSchema, typeKind: arg.typeKind, elementKind: arg.elementKind });

/** The table whose row type a function returns, when it returns one (`SETOF t` or `t`). */
export function returnTable(intro: Introspection, fn: FunctionInfo): QualifiedTable | undefined {
  const t = { schema: fn.returnTypeSchema, name: fn.returnType };
  return fn.returnTypeKind === 'composite' && intro.tables.has(qtKey(t)) ? t : undefined;
}

const functionObjectId = (source: string, qf: QualifiedFunction) => `function:${source}:${qtKey(qf)}`;

/** Identity of a tracked function as a dependent (types.ts `Dependent.id`). */
export const trackedFunctionId = (source: string, qf: QualifiedFunction) => `function@${source}:${qtKey(qf)}`;

function removeFunction(md: Metadata, source: string, qf: QualifiedFunction): Metadata {
  if (!findSource(md, source)) return md;
  return updateSource(md, source, (s) => withFunctions(s, (s.functions ?? []).filter((f) => !sameTable(f.function, qf))));
}

/** A source with its function list replaced; an empty list is left out, as Hasura exports it. */
function withFunctions(s: SourceMeta, functions: FunctionMeta[]): SourceMeta {
  const next: SourceMeta = { ...s, functions };
  if (functions.length === 0) delete next.functions;
  return next;
}

function updateFunction(md: Metadata, source: string, qf: QualifiedFunction, fn: (f: FunctionMeta) => FunctionMeta): Metadata {
  return updateSource(md, source, (s) => withFunctions(s, (s.functions ?? []).map((f) => (sameTable(f.function, qf) ? fn(f) : f))));
}

// ---------------------------------------------------------------------------------------------
// Build: Hasura's `buildFunctionInfo` checks

function integrityErrors(fn: FunctionMeta, info: FunctionInfo, intro: Introspection, dialect: Dialect): string[] {
  const qf = fn.function;
  const config = fn.configuration ?? {};
  const errors: string[] = [];
  const rootName = qf.schema === dialect.defaultSchema ? qf.name : `${qf.schema}_${qf.name}`;
  if (!isGraphQLName(rootName)) errors.push('function name is not a legal GraphQL identifier');
  if (info.variadic) errors.push('function with "VARIADIC" parameters are not supported');
  if (info.returnTypeKind !== 'composite') errors.push('the function does not return a "COMPOSITE" type');
  if (!returnTable(intro, info)) errors.push('the function does not return a table');
  if (info.volatility !== 'volatile' && config.exposed_as === 'mutation') {
    errors.push(
      'the function was requested to be exposed as a mutation, but is not marked VOLATILE. Maybe the function was given the wrong volatility when it was defined?',
    );
  }
  const badNames = info.args.flatMap((a) => (a.name !== null && !isGraphQLName(a.name) ? [a.name] : []));
  if (badNames.length > 0) errors.push(`the function arguments ${badNames.join(',')} are not in compliance with GraphQL spec`);
  const session = config.session_argument;
  if (session !== undefined) {
    const arg = info.args.find((a) => a.name === session);
    if (!arg) errors.push(`given session argument "${session}" not the input argument of the function`);
    else if (!dialect.sessionArgument(argType(arg), 'function')) errors.push(`given session argument "${session}" is not of type json`);
  }
  return errors;
}

function resolveFunction(ctx: FunctionResolveContext): FunctionInfo | undefined {
  const qf = ctx.fn.function;
  const source = ctx.source.name;
  const defaultSchema = ctx.kind.dialect.defaultSchema;
  const fail = (reason: string) => {
    ctx.report({
      type: 'function',
      name: `function ${qtDisplay(qf, defaultSchema)} in source ${source}`,
      reason: `Inconsistent object: ${reason}`,
      definition: qf,
      id: functionObjectId(source, qf),
      remove: (md) => removeFunction(md, source, qf),
    });
    return undefined;
  };
  // A kind that serves no functions as root fields (BigQuery, as Hasura's) refuses every one.
  if (ctx.kind.dialect.trackedFunctions === false) return fail(`in function ${quoted(qf, defaultSchema)}: SQL Functions are not supported for ${ctx.kind.kind} source`);
  const info = singleOverload(ctx.introspection, qf, defaultSchema);
  if (typeof info === 'string') return fail(`in function ${quoted(qf, defaultSchema)}: ${info}`);
  const errors = integrityErrors(ctx.fn, info, ctx.introspection, ctx.kind.dialect);
  if (errors.length > 0) return fail(`in function ${quoted(qf, defaultSchema)}: the function ${quoted(qf, defaultSchema)} cannot be tracked ${reasonMessage(errors)}`);
  // The function's fields are its return table's: it depends on that table being tracked.
  const table = returnTable(ctx.introspection, info)!;
  if (!ctx.tracked.get(qtKey(table))?.info) return fail(`table ${quoted(table, defaultSchema)} is not tracked`);
  return info;
}

// ---------------------------------------------------------------------------------------------
// Operations

const FunctionConfigSchema = v.object({
  session_argument: v.nullish(nameText),
  exposed_as: v.nullish(v.picklist(['query', 'mutation'], 'expected "query" or "mutation"')),
  custom_name: v.nullish(GraphQLNameSchema),
  custom_root_fields: v.nullish(v.object({ function: v.nullish(GraphQLNameSchema), function_aggregate: v.nullish(GraphQLNameSchema) })),
});

/** The configuration as stored: only the keys that were given (Hasura omits `Nothing` fields). */
function storedConfig(c: v.InferOutput<typeof FunctionConfigSchema> | null | undefined): FunctionMeta['configuration'] {
  if (!c) return undefined;
  const out: NonNullable<FunctionMeta['configuration']> = {};
  if (c.session_argument != null) out.session_argument = c.session_argument;
  if (c.exposed_as != null) out.exposed_as = c.exposed_as;
  if (c.custom_name != null) out.custom_name = c.custom_name;
  const roots: Record<string, string> = {};
  if (c.custom_root_fields?.function != null) roots.function = c.custom_root_fields.function;
  if (c.custom_root_fields?.function_aggregate != null) roots.function_aggregate = c.custom_root_fields.function_aggregate;
  if (Object.keys(roots).length > 0) out.custom_root_fields = roots;
  return Object.keys(out).length > 0 ? out : undefined;
}

const trackArgs = (bind: KindBinding) =>
  v.object({
    function: bind.function,
    source: SourceNameSchema,
    configuration: v.nullish(FunctionConfigSchema),
    comment: optionalComment,
  });
type TrackArgs = v.InferOutput<ReturnType<typeof trackArgs>>;

/** Legacy version 1: the function name alone (`{schema, name}` or text). */
const legacyTrackV1 = (bind: KindBinding) =>
  v.pipe(
    bind.function,
    v.transform((qf): TrackArgs => ({ function: qf, source: 'default', configuration: undefined, comment: undefined })),
  );

/** `{function, source}`, or (legacy) the function name alone. */
const untrackArgs = (bind: KindBinding) =>
  v.union([
    v.object({ function: bind.function, source: SourceNameSchema }),
    v.pipe(bind.function, v.transform((qf) => ({ function: qf, source: 'default' }))),
  ]);

const permissionArgs = (bind: KindBinding) => v.object({ function: bind.function, role: nameText, source: SourceNameSchema });
type PermissionArgs = v.InferOutput<ReturnType<typeof permissionArgs>>;

function requireTrackedFunction(source: SourceMeta, qf: QualifiedFunction, defaultSchema: string): FunctionMeta {
  const f = findFunction(source, qf);
  if (!f) throw new SvcError('not-exists', `function ${quoted(qf, defaultSchema)} not found in the cache`, { path: '$.args' });
  return f;
}

export function functionsGroup(db: DatabaseService): CommandGroup {
  const track = (bind: KindBinding): OperationDef<TrackArgs>['run'] => (a, ctx) => {
    const defaultSchema = bind.kind.dialect.defaultSchema;
    const source = requireSource(ctx.metadata, a.source);
    if (findFunction(source, a.function)) {
      throw new SvcError('already-tracked', `function already tracked: ${quoted(a.function, defaultSchema)}`, { path: '$.args' });
    }
    if (findTable(source, a.function)) {
      throw new SvcError('not-supported', `table with name ${quoted(a.function, defaultSchema)} already exists`, { path: '$.args' });
    }
    const entry: FunctionMeta = { function: a.function };
    const configuration = storedConfig(a.configuration);
    if (configuration) entry.configuration = configuration;
    if (a.comment != null) entry.comment = a.comment;
    return {
      metadata: updateSource(ctx.metadata, a.source, (s) => withFunctions(s, [...(s.functions ?? []), entry])),
      response: success,
      defines: [functionObjectId(a.source, a.function)],
    };
  };

  const untrack = (bind: KindBinding): OperationDef<v.InferOutput<ReturnType<typeof untrackArgs>>>['run'] => (a, ctx) => {
    const defaultSchema = bind.kind.dialect.defaultSchema;
    requireTrackedFunction(requireSource(ctx.metadata, a.source), a.function, defaultSchema);
    return { metadata: removeFunction(ctx.metadata, a.source, a.function), response: success };
  };

  const createPermission = (bind: KindBinding): OperationDef<PermissionArgs>['run'] => async (a, ctx) => {
    const defaultSchema = bind.kind.dialect.defaultSchema;
    const source = requireSource(ctx.metadata, a.source);
    const fn = requireTrackedFunction(source, a.function, defaultSchema);
    if ((fn.permissions ?? []).some((p) => p.role === a.role)) {
      throw new SvcError('already-exists', `permission of role "${a.role}" already exists for function ${quoted(a.function, defaultSchema)} in source: "${a.source}"`, {
        path: '$.args',
      });
    }
    const intro = await db.introspection(ctx, a.source);
    const info = singleOverload(intro, a.function, defaultSchema);
    if (typeof info === 'string') throw new SvcError('not-exists', `function ${quoted(a.function, defaultSchema)} not found in the cache`, { path: '$.args' });
    const table = returnTable(intro, info) ?? { schema: info.returnTypeSchema, name: info.returnType };
    const tableMeta = findTable(source, table);
    if (!tableMeta) throw new SvcError('not-exists', `function's return table ${quoted(table, defaultSchema)} not found in the cache`, { path: '$.args' });
    // An inherited role's select permission comes from its parents (Note [Inherited roles] in
    // model/inherit.ts): the committed build's model has it.
    const inherited = db.resolved(ctx.current).sources.get(a.source)?.tables.get(qtKey(table))?.model?.select.has(a.role) === true;
    if (!inherited && !(tableMeta.select_permissions ?? []).some((p) => p.role === a.role)) {
      throw new SvcError(
        'not-supported',
        `function permission can only be added when the function's return table ${quoted(table, defaultSchema)} has select permission configured for role: "${a.role}"`,
        { path: '$.args' },
      );
    }
    // Hasura puts the newest permission first.
    return {
      metadata: updateFunction(ctx.metadata, a.source, a.function, (f) => ({ ...f, permissions: [{ role: a.role }, ...(f.permissions ?? [])] })),
      response: success,
    };
  };

  const dropPermission = (bind: KindBinding): OperationDef<PermissionArgs>['run'] => (a, ctx) => {
    const defaultSchema = bind.kind.dialect.defaultSchema;
    const source = requireSource(ctx.metadata, a.source);
    const fn = findFunction(source, a.function);
    if (!(fn?.permissions ?? []).some((p) => p.role === a.role)) {
      throw new SvcError('not-exists', `permission of role "${a.role}" does not exist for function ${quoted(a.function, defaultSchema)} in source: "${a.source}"`, {
        path: '$.args',
      });
    }
    return {
      metadata: updateFunction(ctx.metadata, a.source, a.function, (f) => {
        const permissions = (f.permissions ?? []).filter((p) => p.role !== a.role);
        const next: FunctionMeta = { ...f, permissions };
        if (permissions.length === 0) delete next.permissions;
        return next;
      }),
      response: success,
    };
  };

  const trackedFunction = (source: string, qf: QualifiedFunction, defaultSchema: string): Dependent => ({
    id: trackedFunctionId(source, qf),
    description: `function ${qtDisplay(qf, defaultSchema)} in source "${source}"`,
    remove: (m) => removeFunction(m, source, qf),
  });

  return {
    name: 'functions',
    operations(bind: KindBinding): OperationDef[] {
      const ops: OperationDef[] = [
        { type: bind.name('track_function'), args: trackArgs(bind), mutates: true, run: track(bind) },
        { type: bind.name('untrack_function'), legacy: bind.legacy('untrack_function'), args: untrackArgs(bind), mutates: true, run: untrack(bind) },
        { type: bind.name('create_function_permission'), args: permissionArgs(bind), mutates: true, run: createPermission(bind) },
        { type: bind.name('drop_function_permission'), args: permissionArgs(bind), mutates: true, run: dropPermission(bind) },
      ];
      const legacyTrack = bind.legacy('track_function');
      if (legacyTrack) {
        const v2 = trackArgs(bind);
        const v1 = legacyTrackV1(bind);
        ops.push({ type: null, legacy: legacyTrack, versions: [1, 2], args: (version) => (version === 2 ? v2 : v1), mutates: true, run: track(bind) });
      }
      return ops;
    },

    resolveFunction,

    dependents(md, target) {
      const source = sourcesOf(md).find((s) => s.name === target.source);
      if (!source) return [];
      const defaultSchema = db.defaultSchemaOf(source) ?? '';
      const tracked = source.functions ?? [];
      if (target.kind === 'function') {
        return tracked.filter((f) => sameTable(f.function, target.function)).map((f) => trackedFunction(source.name, f.function, defaultSchema));
      }
      if (target.kind === 'table') {
        // A function's return table comes from the introspection of the committed build.
        const intro = db.committed().sources.get(source.name)?.introspection;
        if (!intro) return [];
        return tracked
          .filter((f) => {
            const info = singleOverload(intro, f.function, defaultSchema);
            const table = typeof info === 'string' ? undefined : returnTable(intro, info);
            return table !== undefined && sameTable(table, target.table);
          })
          .map((f) => trackedFunction(source.name, f.function, defaultSchema));
      }
      return [];
    },
  };
}
