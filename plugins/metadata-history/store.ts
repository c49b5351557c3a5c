/**
 * The metadata history's tables beside the catalog, written in the catalog's transactions (a
 * catalog extension: Note [Catalog extensions] in core/catalog/store.ts).
 *
 * Note [Metadata history]
 * Every committed version is kept, up to `--metadata-history-limit` versions (0: none), so that
 * an operator can list, read, diff and roll back to them (./operations.ts). A version is not
 * stored whole: `metadata_history_part` holds, per version, the parts that version wrote (a
 * removed part as a row whose value is null), which are exactly the rows the catalog's save
 * writes to `metadata_part`. The document of version V is then, for each key, its latest row at
 * or below V, unless that row is null. So recording a version costs what the catalog write
 * costs, in the same transaction (the rows are copied from `metadata_part` inside PostgreSQL,
 * nothing is sent twice), and not the size of the document; a 2,000-table document is not
 * copied per change.
 *   - The oldest kept version O reads the rows at or below it: they are its full document. When
 *     versions fall out of the window, the rows they alone needed are deleted, for the keys the
 *     dropped versions wrote only (an indexed range), so pruning is as cheap as a write.
 *   - A version is recorded as a delta only when the version before it is recorded. When it is
 *     not (the catalog was written by an instance with the history off or this plugin disabled,
 *     or by an older engine), the history restarts: what it held is deleted and the new version
 *     is stored whole (copied from `metadata_part` inside PostgreSQL). The first boot of a
 *     catalog, or the first with the history on, stores the current version whole the same way.
 *   - `metadata_history` has one row per kept version: when, which operations (the types of a
 *     request's items, a bulk's inner ones), and the role of the session.
 * The tables are ones an older engine does not know and leaves alone, so the catalog's version
 * stays: such an engine writing is a gap, which restarts the history.
 */
import type postgres from 'postgres';
import type { CatalogAccess, CatalogExtension, CatalogWrite, Metadata, Part, VersionRecord } from '../../core/plugin.js';

/** What a version of the history says of itself. */
export interface VersionInfo {
  resourceVersion: number;
  /** When it was committed (ISO 8601). */
  time: string;
  /** The types of the operations of the request that made it. */
  operations: string[];
  /** The role of the session that made it (null for the catalog's first version). */
  role: string | null;
}

export class HistoryStore implements CatalogExtension {
  private catalog: CatalogAccess | undefined;

  /** `limit`: how many versions are kept; 0 records none. `catalog`: given by the kernel when
   * the extension is registered, or here (tests). */
  constructor(
    readonly limit: number,
    catalog?: CatalogAccess,
  ) {
    this.catalog = catalog;
  }

  attach(catalog: CatalogAccess): void {
    this.catalog = catalog;
  }

  private get c(): CatalogAccess {
    if (!this.catalog) throw new Error('the metadata history is not attached to a catalog');
    return this.catalog;
  }

  async init(tx: postgres.TransactionSql, c: CatalogAccess): Promise<void> {
    const s = c.schema;
    await tx`create table if not exists ${s}.metadata_history (
      resource_version bigint primary key,
      created_at timestamptz not null default now(),
      operations text[] not null,
      role text)`;
    await tx`create table if not exists ${s}.metadata_history_part (
      resource_version bigint not null,
      key text not null,
      ord float8,
      value text,
      primary key (key, resource_version))`;
    await tx`create index if not exists metadata_history_part_version on ${s}.metadata_history_part (resource_version)`;
    if (this.limit > 0) {
      const [h] = await tx`select exists (select 1 from ${s}.metadata_history) as kept`;
      if (!h!.kept) await this.snapshot(tx, c, { operations: [], role: null });
    }
  }

  /** Records the version a catalog write made: as the parts it wrote when the version before it
   * is recorded, else whole; and prunes. One statement in the common case, so that a write with
   * the history costs the round trips it cost when the history was part of the catalog's own
   * statements: the version's row, the check that the previous version is recorded, the parts
   * copied from `metadata_part`, and the pruning (see `prune`; with a limit of 1 the version
   * pruned to is this one, whose rows the statement cannot see yet, so it prunes after). */
  async saved(tx: postgres.TransactionSql, c: CatalogAccess, w: CatalogWrite): Promise<void> {
    if (this.limit <= 0) return;
    const s = c.schema;
    const oldest = w.next - this.limit + 1;
    const inline = this.limit > 1;
    const [row] = await tx`with h as (insert into ${s}.metadata_history (resource_version, operations, role)
          values (${w.next}, ${w.record.operations}::text[], ${w.record.role})),
        rec as (select exists (select 1 from ${s}.metadata_history where resource_version = ${w.previous}) as recorded),
        d as (insert into ${s}.metadata_history_part (resource_version, key, ord, value)
          select ${w.next}, k, null, null from unnest(${w.removed}::text[]) k where (select recorded from rec)),
        u as (insert into ${s}.metadata_history_part (resource_version, key, ord, value)
          select ${w.next}, p.key, p.ord, p.value from ${s}.metadata_part p
          where p.key = any(${w.written}::text[]) and (select recorded from rec)),
        gone as (delete from ${s}.metadata_history where resource_version < ${inline ? oldest : 0} returning resource_version),
        pruned as (${this.pruneRows(tx, s, oldest)})
      select recorded from rec`;
    if (row!.recorded !== true) await this.snapshot(tx, c, undefined);
    if (!inline) await this.prune(tx, c, w.next);
  }
  /** Records the catalog's current document whole as its version, forgetting the rest of the
   * history; `record` makes the version's row, else it is there. */
  private async snapshot(tx: postgres.TransactionSql, c: CatalogAccess, record: VersionRecord | undefined) {
    const s = c.schema;
    await tx`delete from ${s}.metadata_history_part`;
    if (record) {
      await tx`delete from ${s}.metadata_history`;
      await tx`insert into ${s}.metadata_history (resource_version, operations, role)
        select resource_version, ${record.operations}::text[], ${record.role} from ${s}.state`;
    } else {
      // The current version's row is in; the versions before the gap cannot be read any more.
      await tx`delete from ${s}.metadata_history where resource_version <> (select resource_version from ${s}.state)`;
    }
    await tx`insert into ${s}.metadata_history_part (resource_version, key, ord, value)
      select st.resource_version, p.key, p.ord, p.value from ${s}.metadata_part p cross join ${s}.state st`;
  }

  /**
   * Drops the versions older than the newest `limit`. With O the oldest version kept, a part row
   * at or below O is needed only while it is its key's latest row at or below O and not a
   * removal; rows that stop being so are those of the keys written by the versions that left the
   * window (above the previous oldest, up to O): `pruneRows`, after `gone` deleted their rows.
   */
  private async prune(tx: postgres.TransactionSql, c: CatalogAccess, newest: number) {
    const oldest = newest - this.limit + 1;
    if (oldest <= 1) return;
    const s = c.schema;
    await tx`with gone as (delete from ${s}.metadata_history where resource_version < ${oldest} returning resource_version)
      ${this.pruneRows(tx, s, oldest)}`;
  }

  /** The part rows only the versions in `gone` (a CTE of the statement) needed. */
  private pruneRows(tx: postgres.TransactionSql, s: CatalogAccess['schema'], oldest: number) {
    return tx`delete from ${s}.metadata_history_part h
      using (select distinct p.key from ${s}.metadata_history_part p
             where p.resource_version > (select min(resource_version) from gone) and p.resource_version <= ${oldest}) k
      where h.key = k.key and h.resource_version <= ${oldest}
        and (h.value is null or exists (select 1 from ${s}.metadata_history_part n
                                        where n.key = h.key and n.resource_version > h.resource_version and n.resource_version <= ${oldest}))`;
  }

  /** The kept versions, newest first, and how many there are. */
  async history(limit: number, offset: number): Promise<{ total: number; versions: VersionInfo[] }> {
    const { sql, schema: s } = this.c;
    return sql.begin('isolation level repeatable read', async (tx) => {
      const [count] = await tx`select count(*)::int as n from ${s}.metadata_history`;
      const rows = await tx`select resource_version, created_at, operations, role from ${s}.metadata_history
        order by resource_version desc limit ${limit} offset ${offset}`;
      return { total: Number(count!.n), versions: rows.map(versionInfo) };
    });
  }

  /** A kept version and its document, or undefined when the history does not have it. */
  async version(resourceVersion: number): Promise<{ info: VersionInfo; metadata: Metadata } | undefined> {
    const { sql, schema: s, join } = this.c;
    return sql.begin('isolation level repeatable read', async (tx) => {
      const [row] = await tx`select resource_version, created_at, operations, role from ${s}.metadata_history
        where resource_version = ${resourceVersion}`;
      if (!row) return undefined;
      const rows = await tx`select key, value from (
          select distinct on (key) key, ord, value from ${s}.metadata_history_part
          where resource_version <= ${resourceVersion} order by key, resource_version desc) latest
        where value is not null order by ord`;
      const parts: Part[] = rows.map((r) => [r.key as string, JSON.parse(r.value as string)]);
      return { info: versionInfo(row), metadata: join(parts) };
    });
  }

  /** The oldest and newest kept versions (undefined when none is). */
  async historyRange(): Promise<{ oldest: number; newest: number } | undefined> {
    const { sql, schema: s } = this.c;
    return sql.begin(async (tx) => {
      const [row] = await tx`select min(resource_version) as lo, max(resource_version) as hi from ${s}.metadata_history`;
      return row?.lo == null ? undefined : { oldest: Number(row.lo), newest: Number(row.hi) };
    });
  }
}

function versionInfo(r: postgres.Row): VersionInfo {
  return {
    resourceVersion: Number(r.resource_version),
    time: (r.created_at as Date).toISOString(),
    operations: r.operations as string[],
    role: (r.role as string | null) ?? null,
  };
}
