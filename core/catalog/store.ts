/**
 * The catalog: the metadata document and its resource_version, in the schema `svc_catalog` of the
 * metadata database. Writes are compare-and-set on resource_version (ARCHITECTURE step 4).
 *
 * Note [Catalog parts]
 * The document is stored as ordered parts (a row per section, and per element of the sections
 * that split themselves, e.g. one row per tracked table), so that a write costs what changed, not
 * the size of the metadata: a save compares each part with what is stored (the JSON text of an
 * untouched part is cached on its object, which structural sharing keeps; see Note [Sharing]),
 * and writes only the parts that differ. Rows keep their `ord` where the order allows, so
 * appending or removing an element does not renumber the others.
 *
 * Note [Metadata history]
 * Every committed version is kept, up to `--metadata-history-limit` versions (0: none), so that
 * an operator can list, read, diff and roll back to them (core/kernel/history-ops.ts). A version
 * is not stored whole: `metadata_history_part` holds, per version, the parts that version wrote
 * (a removed part as a row whose value is null), which are exactly the rows the save writes to
 * `metadata_part`. The document of version V is then, for each key, its latest row at or below
 * V, unless that row is null. So recording a version costs what the catalog write costs, in the
 * same transaction (the rows come from the data-modifying statements themselves, nothing is sent
 * twice), and not the size of the document; a 2,000-table document is not copied per change.
 *   - The oldest kept version O reads the rows at or below it: they are its full document. When
 *     versions fall out of the window, the rows they alone needed are deleted, for the keys the
 *     dropped versions wrote only (an indexed range), so pruning is as cheap as a write.
 *   - A version is recorded as a delta only when the version before it is recorded. When it is
 *     not (the catalog was written by an instance with history off, or by an older engine), the
 *     history restarts: what it held is deleted and the new version is stored whole (copied from
 *     `metadata_part` inside PostgreSQL). The first boot of a catalog, or the first with history
 *     on, stores the current version whole the same way.
 *   - `metadata_history` has one row per kept version: when, which operations (the types of a
 *     request's items, a bulk's inner ones), and the role of the session.
 */
import type postgres from 'postgres';
import type { Metadata } from '../plugin.js';
import { SvcError } from '../errors.js';

export const CATALOG_VERSION = '2';
const LOCK_KEY = 7395001; // advisory lock that serialises catalog initialisation across instances

/*
 * Note [The catalog behind a pooler]
 * The metadata database may be reached through a transaction pooler (PgBouncer), so the catalog's
 * pool prepares nothing (server/boot.ts) and nothing is pipelined on a connection outside a
 * transaction: every statement but the stamp runs inside `sql.begin` (the pooler keeps the server
 * connection until the transaction ends; postgres.js writes nothing behind a BEGIN that is still
 * running), and the stamp is sent ALONE: postgres.js's `onexecute` hook (not in its typings)
 * answering false keeps its connection from taking another statement until it is answered. A
 * statement written behind another outside a transaction could be answered on another server
 * connection, to another client (Note [Poolers] in plugins/postgres/connection.ts).
 */
const ALONE = { onexecute: () => false };

const quoteIdent = (name: string) => `"${name.replace(/"/g, '""')}"`;

export interface CatalogState {
  metadata: Metadata;
  resourceVersion: number;
  /** Incremented when a request changed a source's schema without changing metadata (run_sql
   * DDL), so that other instances refresh their introspection too. */
  epoch: number;
}

export interface Stamp {
  resourceVersion: number;
  epoch: number;
}

export type Part = [key: string, value: unknown];

/** What a version of the history says of itself (Note [Metadata history]). */
export interface VersionInfo {
  resourceVersion: number;
  /** When it was committed (ISO 8601). */
  time: string;
  /** The types of the operations of the request that made it. */
  operations: string[];
  /** The role of the session that made it (null for the catalog's first version). */
  role: string | null;
}

/** Who made a version, recorded with it. */
export interface VersionRecord {
  operations: string[];
  role: string | null;
}

/** How a document is cut into parts and put back together (the kernel builds it from sections). */
export interface DocumentCodec {
  split(md: Metadata): Part[];
  join(parts: Part[]): Metadata;
}

const jsonCache = new WeakMap<object, string>();
function toJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  let s = jsonCache.get(value);
  if (s === undefined) {
    s = JSON.stringify(value);
    jsonCache.set(value, s);
  }
  return s;
}

interface Stored {
  ord: number;
  json: string;
}

export class CatalogStore {
  /** What the catalog holds as of the last load or successful save by this instance. */
  private stored = new Map<string, Stored>();
  /** The parts of that document, compared by reference on the next save. */
  private lastParts: Part[] = [];

  constructor(
    private readonly sql: postgres.Sql,
    private readonly codec: DocumentCodec,
    private readonly schema = 'svc_catalog',
    /** How many versions the history keeps; 0 records none (Note [Metadata history]). */
    readonly historyLimit = 1000,
  ) {}

  private get s() {
    return this.sql(this.schema);
  }

  /** Creates (or migrates) the catalog if needed. Returns true when it was created now (first boot). */
  async init(initial: Metadata): Promise<boolean> {
    return this.sql.begin(async (tx) => {
      await tx`select pg_advisory_xact_lock(${LOCK_KEY})`;
      await tx`create schema if not exists ${this.s}`;
      await tx`create table if not exists ${this.s}.catalog_version (
        id int primary key default 1 check (id = 1),
        version text not null,
        upgraded_on timestamptz not null default now())`;
      const [ver] = await tx`select version from ${this.s}.catalog_version`;
      if (ver && ver.version !== CATALOG_VERSION && ver.version !== '1') {
        throw new SvcError('not-supported', `unsupported version : ${ver.version}`);
      }
      await tx`create table if not exists ${this.s}.state (
        id int primary key default 1 check (id = 1),
        resource_version bigint not null,
        updated_at timestamptz not null default now())`;
      await tx`alter table ${this.s}.state add column if not exists epoch bigint not null default 0`;
      await tx`create table if not exists ${this.s}.metadata_part (
        key text primary key,
        ord float8 not null,
        value text not null)`;
      // Note [Metadata history]. Tables an older engine does not know and leaves alone, so the
      // catalog's version stays: such an engine writing is a gap, which restarts the history.
      await tx`create table if not exists ${this.s}.metadata_history (
        resource_version bigint primary key,
        created_at timestamptz not null default now(),
        operations text[] not null,
        role text)`;
      await tx`create table if not exists ${this.s}.metadata_history_part (
        resource_version bigint not null,
        key text not null,
        ord float8,
        value text,
        primary key (key, resource_version))`;
      await tx`create index if not exists metadata_history_part_version on ${this.s}.metadata_history_part (resource_version)`;
      let created = false;
      if (ver?.version === '1') {
        // Catalog version 1 held the whole document in one row.
        const [old] = await tx`select metadata::text as doc, resource_version from ${this.s}.metadata`;
        await this.writeAll(tx, JSON.parse(old!.doc as string) as Metadata, Number(old!.resource_version));
        await tx`drop table ${this.s}.metadata`;
        await tx`update ${this.s}.catalog_version set version = ${CATALOG_VERSION}, upgraded_on = now()`;
      } else if (!ver) {
        await tx`insert into ${this.s}.catalog_version (version) values (${CATALOG_VERSION})`;
        await this.writeAll(tx, initial, 1);
        created = true;
      }
      if (this.historyLimit > 0) {
        const [h] = await tx`select exists (select 1 from ${this.s}.metadata_history) as kept`;
        if (!h!.kept) await this.snapshot(tx, { operations: [], role: null });
      }
      return created;
    });
  }

  /** Records the catalog's current document whole as its version, forgetting the rest of the
   * history (Note [Metadata history]); `record` makes the version's row, else it is there. */
  private async snapshot(tx: postgres.TransactionSql, record: VersionRecord | undefined) {
    await tx`delete from ${this.s}.metadata_history_part`;
    if (record) {
      await tx`delete from ${this.s}.metadata_history`;
      await tx`insert into ${this.s}.metadata_history (resource_version, operations, role)
        select resource_version, ${record.operations}::text[], ${record.role} from ${this.s}.state`;
    } else {
      // The current version's row is in; the versions before the gap cannot be read any more.
      await tx`delete from ${this.s}.metadata_history where resource_version <> (select resource_version from ${this.s}.state)`;
    }
    await tx`insert into ${this.s}.metadata_history_part (resource_version, key, ord, value)
      select s.resource_version, p.key, p.ord, p.value from ${this.s}.metadata_part p cross join ${this.s}.state s`;
  }

  private async writeAll(tx: postgres.TransactionSql, md: Metadata, resourceVersion: number) {
    const parts = this.codec.split(md);
    await tx`insert into ${this.s}.state (resource_version) values (${resourceVersion})`;
    await tx`insert into ${this.s}.metadata_part (key, ord, value)
      select * from unnest(${parts.map((p) => p[0])}::text[], ${parts.map((_, i) => i)}::float8[], ${parts.map((p) => toJson(p[1]))}::text[])`;
  }

  async load(): Promise<CatalogState> {
    return this.sql.begin('isolation level repeatable read', async (tx) => {
      const [st] = await tx`select resource_version, epoch from ${this.s}.state`;
      if (!st) throw new Error('catalog is not initialised');
      const rows = await tx`select key, ord, value from ${this.s}.metadata_part order by ord`;
      const stored = new Map<string, Stored>();
      const parts: Part[] = rows.map((r) => {
        stored.set(r.key as string, { ord: Number(r.ord), json: r.value as string });
        return [r.key as string, JSON.parse(r.value as string)];
      });
      this.stored = stored;
      const metadata = this.codec.join(parts);
      // Split again, so that the parts share objects with the document the kernel keeps.
      this.lastParts = this.codec.split(metadata);
      return { metadata, resourceVersion: Number(st.resource_version), epoch: Number(st.epoch) };
    });
  }

  /** The catalog's resource_version and epoch (one small row: what instances poll). */
  async stamp(): Promise<Stamp> {
    const [row] = await this.sql.unsafe(`select resource_version, epoch from ${quoteIdent(this.schema)}.state`, [], ALONE as postgres.UnsafeQueryOptions);
    return { resourceVersion: Number(row?.resource_version ?? 0), epoch: Number(row?.epoch ?? 0) };
  }

  /** Records a change of the sources' schemas made without a metadata change; `beforeCommit`
   * commits that change in the same transaction. Returns the new epoch. */
  async bumpEpoch(beforeCommit?: () => Promise<void>): Promise<number> {
    return this.sql.begin(async (tx) => {
      const [row] = await tx`update ${this.s}.state set epoch = epoch + 1 returning epoch`;
      if (beforeCommit) await beforeCommit();
      return Number(row!.epoch);
    });
  }

  /**
   * Writes `metadata` if the stored resource_version is still `expected`; returns the new
   * resource_version, or null on a conflict. Only the parts that differ from what this instance
   * last loaded or saved are written (Note [Catalog parts]). `beforeCommit` runs inside the
   * catalog transaction after the compare-and-set succeeded (Note [Unit of work] in core/uow.ts).
   */
  async save(metadata: Metadata, expected: number, beforeCommit?: () => Promise<void>, record?: VersionRecord): Promise<number | null> {
    const parts = this.codec.split(metadata);
    const change = diffParts(this.lastParts, parts, this.stored);
    const keep = this.historyLimit > 0 ? (record ?? { operations: [], role: null }) : undefined;
    const rv = await this.sql.begin(async (tx) => {
      // The compare-and-set, with the version's history row and whether the version it follows
      // is recorded (Note [Metadata history]), in one statement.
      const rows = keep
        ? await tx`with st as (
              update ${this.s}.state set resource_version = resource_version + 1, updated_at = now()
              where resource_version = ${expected} returning resource_version),
            h as (insert into ${this.s}.metadata_history (resource_version, operations, role)
              select resource_version, ${keep.operations}::text[], ${keep.role} from st)
            select resource_version, exists (select 1 from ${this.s}.metadata_history where resource_version = ${expected}) as recorded from st`
        : await tx`update ${this.s}.state set resource_version = resource_version + 1, updated_at = now()
            where resource_version = ${expected} returning resource_version`;
      if (rows.length === 0) return null;
      const next = Number(rows[0]!.resource_version);
      const delta = keep !== undefined && rows[0]!.recorded === true;
      if (change.deletes.length) {
        if (delta) {
          await tx`with d as (delete from ${this.s}.metadata_part where key = any(${change.deletes}::text[]) returning key)
            insert into ${this.s}.metadata_history_part (resource_version, key, ord, value) select ${next}, key, null, null from d`;
        } else await tx`delete from ${this.s}.metadata_part where key = any(${change.deletes}::text[])`;
      }
      if (change.upserts.length) {
        const u = change.upserts;
        if (delta) {
          await tx`with u as (insert into ${this.s}.metadata_part (key, ord, value)
              select * from unnest(${u.map((x) => x[0])}::text[], ${u.map((x) => x[1].ord)}::float8[], ${u.map((x) => x[1].json)}::text[])
              on conflict (key) do update set ord = excluded.ord, value = excluded.value returning key, ord, value)
            insert into ${this.s}.metadata_history_part (resource_version, key, ord, value) select ${next}, key, ord, value from u`;
        } else {
          await tx`insert into ${this.s}.metadata_part (key, ord, value)
            select * from unnest(${u.map((x) => x[0])}::text[], ${u.map((x) => x[1].ord)}::float8[], ${u.map((x) => x[1].json)}::text[])
            on conflict (key) do update set ord = excluded.ord, value = excluded.value`;
        }
      }
      if (keep && !delta) await this.snapshot(tx, undefined);
      if (keep) await this.prune(tx, next);
      if (beforeCommit) await beforeCommit();
      return next;
    });
    if (rv !== null) {
      for (const k of change.deletes) this.stored.delete(k);
      for (const [k, st] of change.upserts) this.stored.set(k, st);
      this.lastParts = parts;
    }
    return rv;
  }

  /**
   * Drops the versions older than the newest `historyLimit` (Note [Metadata history]). With O the
   * oldest version kept, a part row at or below O is needed only while it is its key's latest
   * row at or below O and not a removal; rows that stop being so are those of the keys written
   * by the versions that left the window (above the previous oldest, up to O).
   */
  private async prune(tx: postgres.TransactionSql, newest: number) {
    const oldest = newest - this.historyLimit + 1;
    if (oldest <= 1) return;
    await tx`with gone as (delete from ${this.s}.metadata_history where resource_version < ${oldest} returning resource_version)
      delete from ${this.s}.metadata_history_part h
      using (select distinct p.key from ${this.s}.metadata_history_part p
             where p.resource_version > (select min(resource_version) from gone) and p.resource_version <= ${oldest}) k
      where h.key = k.key and h.resource_version <= ${oldest}
        and (h.value is null or exists (select 1 from ${this.s}.metadata_history_part n
                                        where n.key = h.key and n.resource_version > h.resource_version and n.resource_version <= ${oldest}))`;
  }

  /** The kept versions, newest first, and how many there are. */
  async history(limit: number, offset: number): Promise<{ total: number; versions: VersionInfo[] }> {
    return this.sql.begin('isolation level repeatable read', async (tx) => {
      const [count] = await tx`select count(*)::int as n from ${this.s}.metadata_history`;
      const rows = await tx`select resource_version, created_at, operations, role from ${this.s}.metadata_history
        order by resource_version desc limit ${limit} offset ${offset}`;
      return { total: Number(count!.n), versions: rows.map(versionInfo) };
    });
  }

  /** A kept version and its document, or undefined when the history does not have it. */
  async version(resourceVersion: number): Promise<{ info: VersionInfo; metadata: Metadata } | undefined> {
    return this.sql.begin('isolation level repeatable read', async (tx) => {
      const [row] = await tx`select resource_version, created_at, operations, role from ${this.s}.metadata_history
        where resource_version = ${resourceVersion}`;
      if (!row) return undefined;
      const rows = await tx`select key, value from (
          select distinct on (key) key, ord, value from ${this.s}.metadata_history_part
          where resource_version <= ${resourceVersion} order by key, resource_version desc) latest
        where value is not null order by ord`;
      const parts: Part[] = rows.map((r) => [r.key as string, JSON.parse(r.value as string)]);
      return { info: versionInfo(row), metadata: this.codec.join(parts) };
    });
  }

  /** The oldest and newest kept versions (undefined when none is). */
  async historyRange(): Promise<{ oldest: number; newest: number } | undefined> {
    return this.sql.begin(async (tx) => {
      const [row] = await tx`select min(resource_version) as lo, max(resource_version) as hi from ${this.s}.metadata_history`;
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

/**
 * What a save must write: parts are compared with the previous list by reference, so only the
 * segment between the common prefix and the common suffix is looked at (the rest is the same
 * rows, in the same order). Within it, a part whose JSON is unchanged and whose ord still fits
 * keeps its row.
 */
export function diffParts(
  prev: Part[],
  next: Part[],
  stored: Map<string, Stored>,
): { upserts: [string, Stored][]; deletes: string[] } {
  let p = 0;
  const min = Math.min(prev.length, next.length);
  const same = (a: Part, b: Part) => a === b || (a[0] === b[0] && a[1] === b[1]);
  while (p < min && same(prev[p]!, next[p]!)) p++;
  let q = 0;
  while (q < min - p && same(prev[prev.length - 1 - q]!, next[next.length - 1 - q]!)) q++;
  const mid = next.slice(p, next.length - q);
  const midKeys = new Set(mid.map((x) => x[0]));
  const deletes = prev.slice(p, prev.length - q).map((x) => x[0]).filter((k) => !midKeys.has(k));
  const lo = p > 0 ? stored.get(next[p - 1]![0])!.ord : undefined;
  const hi = q > 0 ? stored.get(next[next.length - q]![0])!.ord : undefined;
  const placed = assignOrds(mid, stored, lo, hi);
  if (!placed) {
    // No room between the neighbours: renumber everything.
    const all = assignOrds(next, new Map())!;
    return { upserts: [...all], deletes: [...stored.keys()].filter((k) => !all.has(k)) };
  }
  const upserts: [string, Stored][] = [];
  for (const [key, st] of placed) {
    const old = stored.get(key);
    if (!old || old.ord !== st.ord || old.json !== st.json) upserts.push([key, st]);
  }
  return { upserts, deletes };
}

/**
 * Ords for a list of parts that must fit strictly between `lo` and `hi`: a part keeps its stored
 * ord while the stored ords stay increasing along the list (and inside the bounds); the others get
 * ords between their kept neighbours. Returns undefined when the gaps are too small to split.
 */
export function assignOrds(parts: Part[], stored: Map<string, Stored>, lo?: number, hi?: number): Map<string, Stored> | undefined {
  const n = parts.length;
  const ords = new Array<number | undefined>(n);
  let last = lo ?? -Infinity;
  for (let i = 0; i < n; i++) {
    const old = stored.get(parts[i]![0]);
    if (old && old.ord > last && (hi === undefined || old.ord < hi)) {
      ords[i] = old.ord;
      last = old.ord;
    }
  }
  for (let i = 0; i < n; ) {
    if (ords[i] !== undefined) {
      i++;
      continue;
    }
    let j = i;
    while (j < n && ords[j] === undefined) j++;
    const below = i > 0 ? ords[i - 1]! : lo;
    const above = j < n ? ords[j]! : hi;
    const count = j - i;
    if (below !== undefined && above !== undefined && (above - below) / (count + 1) < 1e-6) return undefined;
    for (let k = 0; k < count; k++) {
      if (below === undefined && above === undefined) ords[i + k] = k;
      else if (above === undefined) ords[i + k] = below! + k + 1;
      else if (below === undefined) ords[i + k] = above - (count - k);
      else ords[i + k] = below + ((above - below) * (k + 1)) / (count + 1);
    }
    i = j;
  }
  const out = new Map<string, Stored>();
  for (let i = 0; i < n; i++) out.set(parts[i]![0], { ord: ords[i]!, json: toJson(parts[i]![1]) });
  return out;
}
