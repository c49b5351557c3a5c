/**
 * The catalog: the metadata document and its resource_version, in the schema `svc_catalog` of the
 * metadata database. Writes are compare-and-set on resource_version (ARCHITECTURE step 4).
 * The document is stored as `json` (not jsonb) so the exported key order is the order we wrote.
 */
import type postgres from 'postgres';
import type { Metadata } from '../plugin.js';
import { SvcError } from '../errors.js';

export const CATALOG_VERSION = '1';
const LOCK_KEY = 7395001; // advisory lock that serialises catalog initialisation across instances

export interface CatalogState {
  metadata: Metadata;
  resourceVersion: number;
}

export class CatalogStore {
  constructor(
    private readonly sql: postgres.Sql,
    private readonly schema = 'svc_catalog',
  ) {}

  private get s() {
    return this.sql(this.schema);
  }

  /** Creates the catalog if missing. Returns true when it was created now (first boot). */
  async init(initial: Metadata): Promise<boolean> {
    return this.sql.begin(async (tx) => {
      await tx`select pg_advisory_xact_lock(${LOCK_KEY})`;
      await tx`create schema if not exists ${this.s}`;
      await tx`create table if not exists ${this.s}.catalog_version (
        id int primary key default 1 check (id = 1),
        version text not null,
        upgraded_on timestamptz not null default now())`;
      await tx`create table if not exists ${this.s}.metadata (
        id int primary key default 1 check (id = 1),
        metadata json not null,
        resource_version bigint not null default 1,
        updated_at timestamptz not null default now())`;
      const [ver] = await tx`select version from ${this.s}.catalog_version`;
      if (ver && ver.version !== CATALOG_VERSION) {
        throw new SvcError('not-supported', `unsupported version : ${ver.version}`);
      }
      if (!ver) await tx`insert into ${this.s}.catalog_version (version) values (${CATALOG_VERSION})`;
      const inserted = await tx`insert into ${this.s}.metadata (metadata, resource_version)
        values (${JSON.stringify(initial)}::text::json, 1) on conflict (id) do nothing returning id`;
      return inserted.length === 1;
    });
  }

  async load(): Promise<CatalogState> {
    const [row] = await this.sql`select metadata, resource_version from ${this.s}.metadata`;
    if (!row) throw new Error('catalog is not initialised');
    return { metadata: (typeof row.metadata === 'string' ? JSON.parse(row.metadata) : row.metadata) as Metadata, resourceVersion: Number(row.resource_version) };
  }

  async resourceVersion(): Promise<number> {
    const [row] = await this.sql`select resource_version from ${this.s}.metadata`;
    return Number(row?.resource_version ?? 0);
  }

  /**
   * Writes `metadata` if the stored resource_version is still `expected`; returns the new
   * resource_version, or null on a conflict. `beforeCommit` runs inside the catalog transaction
   * after the compare-and-set succeeded (see Note [Unit of work] in core/uow.ts).
   */
  async save(metadata: Metadata, expected: number, beforeCommit?: () => Promise<void>): Promise<number | null> {
    const text = JSON.stringify(metadata);
    return this.sql.begin(async (tx) => {
      const rows = await tx`update ${this.s}.metadata
        set metadata = ${text}::text::json, resource_version = resource_version + 1, updated_at = now()
        where resource_version = ${expected} returning resource_version`;
      if (rows.length === 0) return null;
      if (beforeCommit) await beforeCommit();
      return Number(rows[0]!.resource_version);
    });
  }
}
