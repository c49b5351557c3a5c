/**
 * Nested updates (Note [Nested updates]): the `_nested` argument of `update_<t>`,
 * `update_<t>_by_pk` and of each update of `update_<t>_many`, its input types for one role, and
 * its planning into NestedWriteIR. The mutation fields themselves are ./mutation.ts's.
 */
import { GraphQLInputObjectType, GraphQLList, GraphQLNonNull, type GraphQLFieldConfigArgumentMap, type GraphQLInputFieldConfigMap, type GraphQLInputType, type GraphQLNamedType } from 'graphql';
import { SvcError } from '../../../core/errors.js';
import type { TypeRegistry } from '../../../core/plugin.js';
import type { ColumnValue, NestedInsertIR, NestedWriteIR, UpdateIR } from '../ir/types.js';
import type { DeletePermissionIR, InsertPermissionIR, ResolvedColumn, ResolvedRelationship, UpdatePermissionIR } from '../model/resolved.js';
import type { ScalarType } from '../model/types.js';
import { tn } from './names.js';
import { and, type Arg, fail, isObj, type Planner } from './plan.js';
import { tableColumnsOf, type RoleSchema, type RoleTable } from './role.js';

/*
 * Note [Nested updates]
 * `update_<t>(where, _set, ..., _nested: {...})` (and `_by_pk`, and every update of
 * `update_<t>_many`) changes, in the same statement, rows related to the rows it updates:
 *   _nested: {
 *     <array relationship>: {delete: {where}, update: {where, _set, _inc, ..., _nested}, insert: {objects}},
 *     <object relationship>: {update: {_set, _inc, ..., _nested}}
 *   }
 * For every row the update writes (its parents), the relationship's rows of that row: those of
 * them that match `where` are deleted or updated; `objects` are inserted for each parent, their
 * mapped columns taken from it (a row inserted may bring array relationship rows of its own,
 * `{comments: {data: [...]}}`, inserted for it in turn). An update's own `_nested` nests further
 * the same way. With `_nested` and no operator of its own, a row is not written, only the parent
 * of its nested writes.
 * - Permissions: every table's own. A delete needs the role's delete permission on the remote
 *   table (its filter ANDed with `where`), an update its update permission (filter, check on the
 *   new row, columns, presets), an insert its insert permission (check, columns, presets); the
 *   input type lists only what the role may do, so a role without a permission does not see
 *   that part. A failed check anywhere fails the whole statement: nothing is written.
 * - Order: as if one after the other, depth first: the row's own update, then per relationship
 *   (in the order given) its deletes, its updates, its inserts. Each check sees the writes before
 *   it (a check on a child that reads its parent sees the parent updated); `returning` (and
 *   every relationship it reads) sees the state after the whole mutation. A row is written at most
 *   once: an update or delete leaves out the rows the mutation wrote before, and no update or
 *   delete reaches the rows it inserted.
 * - `affected_rows` counts every row written: updated, deleted and inserted, at every depth.
 * - Tables: the parent and every table updated or deleted through a relationship need a primary
 *   key (rows are told apart by it); a mutation with `_nested` may not change a primary key.
 *   Object relationships of inserted rows and `on_conflict` are not taken inside `_nested`.
 * The SQL is one statement of data-modifying CTEs (Note [Nested updates in SQL] in
 * plugins/postgres/sql/compile-nested.ts), as nested inserts are.
 */

const nn = <T extends GraphQLInputType>(t: T) => new GraphQLNonNull(t);
const list = <T extends GraphQLInputType>(t: T) => new GraphQLList(t);

/** How a role may write a table (./mutation.ts's WriteTable). */
export interface Writable {
  t: RoleTable;
  insert?: InsertPermissionIR;
  update?: UpdatePermissionIR;
  delete?: DeletePermissionIR;
  insertColumns: ResolvedColumn[];
  updateColumns: ResolvedColumn[];
}

/** What of the mutation schema the nested input types need. */
export interface NestedHost {
  readonly rs: RoleSchema;
  writeOf(t: RoleTable): Writable | null;
  insertInput(w: Writable): GraphQLInputObjectType;
  updateArgs(w: Writable): GraphQLFieldConfigArgumentMap;
  insertRelationships(w: Writable): { rel: ResolvedRelationship; remote: Writable }[];
}

/** What of the mutation planner the planning needs. */
export interface NestedPlannerHost {
  readonly p: Planner;
  readonly ms: NestedHost & { nested: NestedSchema };
  updateSet(w: Writable, args: Record<string, Arg>, path?: string): UpdateIR['set'] | undefined;
  objectOf(x: Arg | undefined, what: string): Record<string, Arg> | undefined;
  listOf(x: Arg | undefined): Arg[];
}

const hasKey = (w: Writable) => (w.t.model.primaryKey?.length ?? 0) > 0;
const canUpdate = (w: Writable) => hasKey(w) && !!w.update && w.updateColumns.length + w.update.set.size > 0;

/** What the role may do through one relationship. */
interface Through {
  rel: ResolvedRelationship;
  remote: Writable;
  insert: boolean;
  update: boolean;
  delete: boolean;
}

export class NestedSchema {
  constructor(
    private readonly host: NestedHost,
    private readonly types: TypeRegistry,
  ) {}

  private named<T extends GraphQLNamedType>(name: string, make: () => T): T {
    return (this.types.get(name) as T | undefined) ?? this.types.define(make());
  }

  private remoteOf(w: Writable, rel: ResolvedRelationship): Writable | null {
    const t = this.host.rs.writable.get(`${w.t.source.name}\0${rel.remoteKey}`);
    return t ? this.host.writeOf(t) : null;
  }

  /** The relationships of `w` the role may write through, and how. */
  relationships(w: Writable): Through[] {
    const out: Through[] = [];
    for (const rel of w.t.model.relationships) {
      const remote = this.remoteOf(w, rel);
      if (!remote) continue;
      const array = rel.kind === 'array';
      const th: Through = {
        rel,
        remote,
        insert: array && !!remote.insert && remote.insertColumns.length > 0,
        update: canUpdate(remote),
        delete: array && hasKey(remote) && !!remote.delete,
      };
      if (th.insert || th.update || th.delete) out.push(th);
    }
    return out;
  }

  /** `_nested`, where the dialect has nested updates, the table a primary key and the role some
   * relationship to write through. */
  arg(w: Writable): { _nested?: { type: GraphQLInputObjectType; description: string } } {
    if (!w.t.source.kind.dialect.nestedUpdates || !hasKey(w) || this.relationships(w).length === 0) return {};
    return { _nested: { type: this.input(w), description: 'writes through relationships of the rows updated' } };
  }

  private input(w: Writable): GraphQLInputObjectType {
    const name = tn(w.t, '_nested_input');
    return this.named(name, () =>
      new GraphQLInputObjectType({
        name,
        description: `writes through relationships of updated rows of table "${w.t.model.table.name}"`,
        fields: () => {
          const fields: GraphQLInputFieldConfigMap = {};
          for (const th of this.relationships(w)) fields[th.rel.name] = { type: th.rel.kind === 'array' ? this.arrayInput(th) : this.objectInput(th.remote) };
          return Object.fromEntries(Object.keys(fields).sort().map((k) => [k, fields[k]!]));
        },
      }),
    );
  }

  /** The update operators of `w` and its own `_nested` (an update's arguments, or an input's fields). */
  updateFields(w: Writable): GraphQLInputFieldConfigMap {
    return { ...(this.host.updateArgs(w) as GraphQLInputFieldConfigMap), ...this.arg(w) };
  }

  private arrayInput(th: Through): GraphQLInputObjectType {
    const w = th.remote;
    // Named after the remote and what the role may do, as the input differs with it.
    const name = tn(w.t, `_arr_rel_nested_input`);
    return this.named(name, () =>
      new GraphQLInputObjectType({
        name,
        description: `writes through an array relationship to table "${w.t.model.table.name}": delete, then update, then insert`,
        fields: () => ({
          ...(th.delete ? { delete: { type: this.deleteInput(w) } } : {}),
          ...(th.insert ? { insert: { type: this.insertInput(w) } } : {}),
          ...(th.update ? { update: { type: this.updateInput(w) } } : {}),
        }),
      }),
    );
  }

  private objectInput(w: Writable): GraphQLInputObjectType {
    const name = tn(w.t, '_obj_rel_nested_input');
    return this.named(name, () =>
      new GraphQLInputObjectType({
        name,
        description: `writes through an object relationship to table "${w.t.model.table.name}"`,
        fields: () => ({ update: { type: this.objectUpdateInput(w) } }),
      }),
    );
  }

  private deleteInput(w: Writable): GraphQLInputObjectType {
    const name = tn(w.t, '_nested_delete_input');
    return this.named(name, () => new GraphQLInputObjectType({ name, description: `rows of table "${w.t.model.table.name}" to delete`, fields: () => ({ where: { type: nn(this.host.rs.boolExp(w.t)) } }) }));
  }

  private insertInput(w: Writable): GraphQLInputObjectType {
    const name = tn(w.t, '_nested_insert_input');
    return this.named(name, () =>
      new GraphQLInputObjectType({ name, description: `rows to insert into table "${w.t.model.table.name}" for each updated row`, fields: () => ({ objects: { type: nn(list(nn(this.host.insertInput(w)))) } }) }),
    );
  }

  private updateInput(w: Writable): GraphQLInputObjectType {
    const name = tn(w.t, '_nested_update_input');
    return this.named(name, () =>
      new GraphQLInputObjectType({
        name,
        description: `rows of table "${w.t.model.table.name}" to update`,
        fields: () => ({ where: { type: nn(this.host.rs.boolExp(w.t)) }, ...this.updateFields(w) }),
      }),
    );
  }

  private objectUpdateInput(w: Writable): GraphQLInputObjectType {
    const name = tn(w.t, '_obj_rel_nested_update_input');
    return this.named(name, () => new GraphQLInputObjectType({ name, description: `the related row of table "${w.t.model.table.name}" to update`, fields: () => this.updateFields(w) }));
  }
}

// ---------------------------------------------------------------------------------------------
// Planning

/** Whether update arguments give an operator (`_set`, `_inc`...) of the row's own. */
const givesOperators = (args: Record<string, Arg>) => Object.keys(args).some((k) => k.startsWith('_') && k !== '_nested' && args[k] !== undefined);

/** The row's own changes of an update that may have `_nested`: with `_nested` only, none (the row
 * is only a parent). undefined: nothing to write. */
export function ownSet(mp: NestedPlannerHost, w: Writable, args: Record<string, Arg>, path: string): UpdateIR['set'] | undefined {
  const nested = args._nested !== undefined && args._nested !== null;
  if (nested && !givesOperators(args)) return [];
  // Operators given but empty (`_set: {}`) change nothing of the row's own.
  return mp.updateSet(w, args, path) ?? (nested ? [] : undefined);
}

/** A primary key column a mutation with `_nested` would change (Note [Nested updates]). */
export function refuseKeyChange(w: Writable, set: UpdateIR['set'], path: string): void {
  const pk = w.t.model.primaryKey ?? [];
  const hit = set.find((s) => pk.includes(s.column));
  if (hit) throw new SvcError('not-supported', `a mutation with "_nested" cannot change the primary key column "${hit.column}" of table "${w.t.model.table.name}"`, { path });
}

/** `_nested` of an update of `w`'s rows -> the writes through its relationships. */
export function planNested(mp: NestedPlannerHost, w: Writable, x: Arg | undefined, path: string): NestedWriteIR[] {
  const o = mp.objectOf(x, '_nested');
  if (!o) return [];
  const ns = mp.ms.nested;
  const offered = ns.relationships(w);
  const out: NestedWriteIR[] = [];
  for (const [name, val] of Object.entries(o)) {
    const th = offered.find((r) => r.rel.name === name);
    if (!th) throw fail(`field "${name}" not found in type: '${tn(w.t, '_nested_input')}'`);
    const ops = mp.objectOf(val, name);
    if (!ops) continue;
    const remote = th.remote;
    const at = `${path}.${name}`;
    const n: NestedWriteIR = { relationship: th.rel.name, mapping: th.rel.mapping, table: remote.t.model.table, tableColumns: tableColumnsOf(remote.t), ...(hasKey(remote) ? { key: remote.t.model.primaryKey! } : {}) };
    for (const [op, v] of Object.entries(ops)) {
      const args = mp.objectOf(v, op);
      if (!args) continue;
      if (op === 'delete' && th.delete) n.delete = { where: and(mp.p.where(args.where, remote.t), remote.delete!.filter) };
      else if (op === 'update' && th.update) {
        const u = remote.update!;
        const where = th.rel.kind === 'array' ? and(mp.p.where(args.where, remote.t), u.filter) : u.filter;
        const set = ownSet(mp, remote, args, `${at}.update`);
        const nested = planNested(mp, remote, args._nested, `${at}.update._nested`);
        if (set) refuseKeyChange(remote, set, `${at}.update`);
        if ((set && set.length > 0) || nested.length > 0) n.update = { where, set: set ?? [], check: u.check, nested };
      } else if (op === 'insert' && th.insert) {
        const insert = planInsert(mp, remote, mp.listOf(args.objects), th.rel.mapping.map(([, r]) => r), `${at}.insert.objects`);
        if (insert.rows.length > 0) n.insert = insert;
      } else throw fail(`field "${op}" not found in type: '${tn(remote.t, th.rel.kind === 'array' ? '_arr_rel_nested_input' : '_obj_rel_nested_input')}'`);
    }
    if (n.delete || n.update || n.insert) out.push(n);
  }
  return out;
}

/** Rows inserted for every parent row; `parentColumns`: the columns the parent gives them. */
function planInsert(mp: NestedPlannerHost, w: Writable, objects: Arg[], parentColumns: readonly string[], path: string): NestedInsertIR {
  const perm = w.insert!;
  const columns = new Map<string, { scalar: ScalarType }>();
  for (const c of w.t.model.columns) columns.set(c.name, { scalar: c.scalar });
  const rels = mp.ms.insertRelationships(w);
  const rows = objects.map((x, i) => {
    const at = `${path}[${i}]`;
    const obj = mp.objectOf(x, 'objects');
    if (!obj) throw fail('expected an object for "objects"');
    const values = new Map<string, ColumnValue>();
    const after: NestedWriteIR[] = [];
    const given = Object.keys(obj).flatMap((k) => w.insertColumns.filter((c) => c.field === k).map((c) => c.name));
    const twice = given.filter((c) => parentColumns.includes(c));
    if (twice.length) throw new SvcError('validation-failed', `cannot insert ${twice.map((c) => `"${c}"`).join(', ')} columns as their values are already being determined by the parent row`, { path: at });
    for (const [k, val] of Object.entries(obj)) {
      const col = w.insertColumns.find((c) => c.field === k);
      if (col) {
        values.set(col.name, { k: 'value', value: mp.p.leaf(val, false) });
        continue;
      }
      const r = rels.find((x) => x.rel.name === k);
      if (!r) throw fail(`field "${k}" not found in type: '${tn(w.t, '_insert_input')}'`);
      const nested = mp.objectOf(val, k);
      if (!nested) continue;
      if (r.rel.kind === 'object') throw new SvcError('not-supported', `inserting through the object relationship "${k}" is not supported inside "_nested"`, { path: `${at}.${k}` });
      if (mp.p.shape(nested.on_conflict) != null) throw new SvcError('not-supported', '"on_conflict" is not supported inside "_nested"', { path: `${at}.${k}` });
      const data = mp.listOf(nested.data);
      if (data.length === 0) continue;
      const insert = planInsert(mp, r.remote, data, r.rel.mapping.map(([, remote]) => remote), `${at}.${k}.data`);
      after.push({ relationship: r.rel.name, mapping: r.rel.mapping, table: r.remote.t.model.table, tableColumns: tableColumnsOf(r.remote.t), insert });
    }
    // Presets win over anything given (preset columns are not in the input type).
    for (const [c, v] of perm.set) values.set(c, { k: 'value', value: v });
    return { values, after };
  });
  return { columns, rows, check: perm.check };
}
