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
 * appending or removing an element does not renumber the others. Splits return the same part
 * objects for what did not change, and take them from the last split outside the run that did
 * (lib/lists.ts), so a save at thousands of tables compares pointers for the rest.
 *
 * Note [Catalog extensions]
 * A plugin may keep tables of its own beside the catalog's, in its schema, written with it (the
 * metadata-history plugin keeps every committed version: Note [Metadata history] in
 * plugins/metadata-history/store.ts). It registers a CatalogExtension (KernelApi.catalogExtension):
 *   - `init` runs in the catalog's initialisation transaction, under its advisory lock, after the
 *     catalog's own tables and first document are written: it creates its tables if missing;
 *   - `saved` runs in the transaction of every metadata write, after the compare-and-set and the
 *     parts are written and before the unit of work commits (Note [Unit of work] in core/uow.ts),
 *     with the keys of the parts written and removed (their rows are in `metadata_part`, so an
 *     extension copies them inside PostgreSQL and nothing is sent twice) and who made the version.
 * A failing extension fails the write, which is rolled back whole. Nothing else calls them: an
 * epoch bump (run_sql DDL) is no new version.
 */
import type postgres from 'postgres';
import type { CatalogAccess, CatalogExtension, CatalogWrite, Metadata, Part, VersionRecord } from '../types.js';
import { SvcError } from '../errors.js';
import { changedRun } from '../../lib/lists.js';

export type { Part, VersionRecord };

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
 * connection, to another client (Note [Poolers] in plugins/postgres/connection/connection.ts).
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
  ) {
    this.access = { sql, schema: sql(schema), join: (parts) => codec.join(parts) };
  }

  /** Note [Catalog extensions]: registered while the plugins are set up, before `init`. */
  private readonly extensions: CatalogExtension[] = [];
  readonly access: CatalogAccess;

  extend(e: CatalogExtension): CatalogAccess {
    this.extensions.push(e);
    return this.access;
  }

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
      for (const e of this.extensions) await e.init?.(tx, this.access);
      return created;
    });
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
    const rv = await this.sql.begin(async (tx) => {
      const rows = await tx`update ${this.s}.state set resource_version = resource_version + 1, updated_at = now()
        where resource_version = ${expected} returning resource_version`;
      if (rows.length === 0) return null;
      const next = Number(rows[0]!.resource_version);
      if (change.deletes.length) await tx`delete from ${this.s}.metadata_part where key = any(${change.deletes}::text[])`;
      if (change.upserts.length) {
        const u = change.upserts;
        await tx`insert into ${this.s}.metadata_part (key, ord, value)
          select * from unnest(${u.map((x) => x[0])}::text[], ${u.map((x) => x[1].ord)}::float8[], ${u.map((x) => x[1].json)}::text[])
          on conflict (key) do update set ord = excluded.ord, value = excluded.value`;
      }
      const write: CatalogWrite = { previous: expected, next, written: change.upserts.map((x) => x[0]), removed: change.deletes, record: record ?? { operations: [], role: null } };
      for (const e of this.extensions) await e.saved?.(tx, this.access, write);
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
}

/*
 * Note [Catalog ords]
 * A part's row keeps its ord (a float8; the document is read back in ord order) while the order
 * allows, and parts put between two rows take ords between theirs, halving the gap. Tracking
 * tables one after another puts each between the source's last table and the row after it (the
 * next section's), so after about twenty such the gap was too small to split and every row of
 * the catalog was numbered again and written: at 10,000 tables about a second, once every
 * twenty tables tracked (the two-core machine, 2026-11-29, in the engine's process). Now the
 * rows from the run to the nearer end of the list are numbered again, one apart after the
 * neighbour kept (or before it): for a table tracked last, the few rows of the sections after
 * the sources, and they make room for the next twenty.
 */
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
  const { start, prevEnd, nextEnd } = changedRun(prev, next, (a, b) => a === b || (a[0] === b[0] && a[1] === b[1]));
  const mid = next.slice(start, nextEnd);
  const midKeys = new Set(mid.map((x) => x[0]));
  const deletes = prev.slice(start, prevEnd).map((x) => x[0]).filter((k) => !midKeys.has(k));
  const lo = start > 0 ? stored.get(next[start - 1]![0])!.ord : undefined;
  const hi = nextEnd < next.length ? stored.get(next[nextEnd]![0])!.ord : undefined;
  // No room between the neighbours: the parts from the run to the nearer end of the list are
  // numbered again, one apart from the neighbour kept (Note [Catalog ords]).
  const placed =
    assignOrds(mid, stored, lo, hi) ??
    (next.length - start <= nextEnd ? assignOrds(next.slice(start), new Map(), lo, undefined) : assignOrds(next.slice(0, nextEnd), new Map(), undefined, hi))!;
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
