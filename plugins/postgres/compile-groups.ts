/**
 * Grouped aggregates (`<t>_groups`, `<rel>_groups`; Note [Grouped aggregates] in
 * plugins/database/ir/types.ts) -> the part of a PostgreSQL statement that builds their JSON list.
 * The statement's compiler (compile.ts) calls it with itself as the `SqlHost`, so that values,
 * aliases, filters and the rows a mutation wrote earlier are the statement's own.
 */
import type { AggregateOp, AggregateTerm, BoolIR, GroupField, GroupKeyField, GroupKeyIR, GroupsIR, QualifiedTable, Redaction, Value } from '../database/index.js';
import { literalCount } from '../database/index.js';
import { DIRS, lit, output, quoteIdent } from './identifiers.js';
import { pgAggregate } from './aggregates.js';

/*
 * Note [Grouped aggregates in SQL]
 * One subquery per `_groups` field, in three levels:
 *
 *   select coalesce(json_agg(_g."j" order by _g."o0", ...), '[]') from (
 *     select _g.* from (
 *       select <group's JSON> as "j", <order keys> as "o0"..., <having's aggregates> as "agg0"...
 *       from (select t.*, <key> as "__svc_k0", ... from <table> as t where <filter and where>) as t
 *       group by t."__svc_k0", ...
 *     ) as _g where <having> order by ... limit ... offset ...
 *   ) as _g
 *
 * The keys are computed once per row in the innermost select (a relationship key is the same
 * correlated scalar subquery as an order key through object relationships, with the remote's
 * filter), and the GROUP BY names them, so the select list never has to repeat an expression
 * for PostgreSQL to match it to the GROUP BY (which it would not do for a subquery or a bind
 * parameter). `having` compares the aggregates projected as `agg<i>` (a boolean expression of
 * the IR over those columns, compiled as any other). The order keys are projected too; the
 * window's own `order by` is written only with a limit or an offset (Note [One sort per list]).
 * Without keys there is no GROUP BY, and so exactly one group, as `_aggregate` has one answer.
 */

/** What of the statement's compiler a `_groups` field needs. */
export interface SqlHost {
  alias(): string;
  param(v: Value, json?: boolean, format?: (x: unknown) => string): string;
  bool(e: BoolIR, t: string, root: string): string;
  src(t: QualifiedTable): string;
  redacted(expr: string, redact: BoolIR | Redaction | undefined, t: string): string;
}

/** The units a key may be truncated to: `date_trunc`'s, spliced only from this list. */
const UNITS = new Set(['hour', 'day', 'week', 'month', 'quarter', 'year']);

/** A key's value on the row `t` of the grouped table. */
function keyExpr(c: SqlHost, k: GroupKeyIR, t: string): string {
  const build = (i: number, cur: string): string => {
    if (i === k.path.length) {
      const v = c.redacted(`${cur}.${quoteIdent(k.column)}`, k.redact, cur);
      if (!k.truncate) return v;
      if (!UNITS.has(k.truncate)) throw new Error(`unknown unit "${k.truncate}"`);
      // A date is truncated as a timestamp (date_trunc has no date form; the implicit cast would
      // go through timestamptz and the session's time zone), then read back as the column's type.
      const arg = k.scalar.name === 'date' ? `(${v})::timestamp` : v;
      return `(date_trunc(${lit(k.truncate)}, ${arg}))::${k.scalar.bindAs}`;
    }
    const step = k.path[i]!;
    const a = c.alias();
    const on = step.mapping.map(([own, remote]) => `${a}.${quoteIdent(remote)} = ${cur}.${quoteIdent(own)}`).join(' and ');
    return `(select ${build(i + 1, a)} from ${c.src(step.remote)} as ${a} where ${on} and ${c.bool(step.filter, a, a)} limit 1)`;
  };
  return build(0, t);
}

/** An aggregate of the group's rows (alias `t`). */
function termExpr(c: SqlHost, term: AggregateTerm, t: string): string {
  if (term.fn === 'count' && term.column === undefined) return 'count(*)';
  if (term.column === undefined) throw new Error(`the aggregate ${term.fn} needs a column`);
  return `${term.fn === 'count' ? 'count' : pgAggregate(term.fn)}(${c.redacted(`${t}.${quoteIdent(term.column)}`, term.redact, t)})`;
}

/** `aggregate { count sum {..} ... }` of a group: as compile.ts's `aggregate` builds it for `_aggregate`. */
export function aggregateJson(c: SqlHost, ops: AggregateOp[], t: string): string {
  const parts = ops.map((op): string => {
    if (op.k === 'typename') return `${lit(op.key)}, ${lit(op.name)}`;
    if (op.k === 'count') {
      const cols = (op.columns ?? []).map((col, i) => c.redacted(`${t}.${quoteIdent(col)}`, op.redact?.[i], t));
      const arg = cols.length === 0 ? '*' : cols.length === 1 ? cols[0]! : `(${cols.join(', ')})`;
      return `${lit(op.key)}, count(${op.distinct && cols.length ? 'distinct ' : ''}${arg})`;
    }
    const inner = op.columns.map((col) => {
      if (col.column === undefined) return `${lit(col.key)}, ${lit(col.typename!)}`;
      const v = `${pgAggregate(op.fn)}(${c.redacted(`${t}.${quoteIdent(col.column)}`, col.redact, t)})`;
      return `${lit(col.key)}, ${col.asText ? `(${v})::text` : v}`;
    });
    return `${lit(op.key)}, json_build_object(${inner.join(', ')})`;
  });
  return `json_build_object(${parts.join(', ')})`;
}

function keysJson(fields: GroupKeyField[], t: string): string {
  const parts = fields.map((f): string => {
    if (f.k === 'typename') return `${lit(f.key)}, ${lit(f.name)}`;
    if (f.k === 'key') return `${lit(f.key)}, ${output(`${t}."__svc_k${f.index}"`, f.scalar, f.asText)}`;
    return `${lit(f.key)}, ${keysJson(f.fields, t)}`;
  });
  return `json_build_object(${parts.join(', ')})`;
}

function groupJson(c: SqlHost, fields: GroupField[], t: string): string {
  const parts = fields.map((f): string => {
    if (f.k === 'typename') return `${lit(f.key)}, ${lit(f.name)}`;
    if (f.k === 'keys') return `${lit(f.key)}, ${keysJson(f.fields, t)}`;
    return `${lit(f.key)}, ${aggregateJson(c, f.fields, t)}`;
  });
  return `json_build_object(${parts.join(', ')})`;
}

/**
 * The subquery (`select coalesce(json_agg(...), '[]') from ...`) whose one value is the JSON list
 * of the groups (Note [Grouped aggregates in SQL]). `join`: for `<rel>_groups`, the relationship's
 * column pairs (parent's, remote's) and the parent row's alias.
 */
export function groupsSelect(c: SqlHost, g: GroupsIR, join?: { mapping: readonly (readonly [string, string])[]; parent: string }): string {
  const t = c.alias();
  const keys = g.keys.map((k) => keyExpr(c, k, t));
  const conds = [c.bool(g.where, t, t)];
  if (join) conds.push(...join.mapping.map(([own, remote]) => `${t}.${quoteIdent(remote)} = ${join.parent}.${quoteIdent(own)}`));
  const inner = `select ${t}.*${keys.map((k, i) => `, ${k} as "__svc_k${i}"`).join('')} from ${c.src(g.table)} as ${t} where ${conds.join(' and ')}`;
  const cols = [`${groupJson(c, g.fields, t)} as "j"`];
  g.orderBy.forEach((o, i) => cols.push(`${o.k === 'key' ? `${t}."__svc_k${o.index}"` : termExpr(c, o.term, t)} as "o${i}"`));
  g.having?.terms.forEach((term, i) => cols.push(`${termExpr(c, term, t)} as "agg${i}"`));
  const groupBy = keys.length ? ` group by ${keys.map((_, i) => `${t}."__svc_k${i}"`).join(', ')}` : '';
  const grouped = `select ${cols.join(', ')} from (${inner}) as ${t}${groupBy}`;
  const a = c.alias();
  const order = g.orderBy.map((o, i) => `${a}."o${i}" ${DIRS[o.dir]}`).join(', ');
  let window = `select ${a}.* from (${grouped}) as ${a}`;
  if (g.having) window += ` where ${c.bool(g.having.e, a, a)}`;
  // A literal limit or offset is written into the statement (Note [Literal limits] in compile.ts).
  const given = literalCount(g.limit);
  const cap = g.limitCap;
  let limit: string | undefined;
  if (typeof given === 'number') limit = String(cap === undefined ? given : Math.min(given, cap));
  else if (given) limit = cap === undefined ? `(${c.param(given)})::int8` : `least((${c.param(given)})::int8, ${cap})`;
  else if (cap !== undefined) limit = String(cap);
  const skip = literalCount(g.offset);
  if (order && (limit !== undefined || skip !== undefined)) window += ` order by ${order}`;
  if (limit !== undefined) window += ` limit ${limit}`;
  if (skip !== undefined) window += ` offset ${typeof skip === 'number' ? skip : `(${c.param(skip)})::int8`}`;
  return `select coalesce(json_agg(${a}."j"${order ? ` order by ${order}` : ''}), '[]') from (${window}) as ${a}`;
}
