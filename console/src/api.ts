/**
 * The console's only way to the server: the public APIs. POST /v1/metadata ({type, args}),
 * run_sql on /v2/query (or the legacy /v1/query when a server has no /v2/query), and /v1/graphql.
 * The admin secret the user typed is kept in sessionStorage and sent as X-Svc-Admin-Secret.
 */

const KEY = 'svc-console-admin-secret';

export function getSecret(): string | null {
  return sessionStorage.getItem(KEY);
}
export function setSecret(s: string): void {
  sessionStorage.setItem(KEY, s);
}
export function clearSecret(): void {
  sessionStorage.removeItem(KEY);
}

export function adminHeaders(): Record<string, string> {
  const s = getSecret();
  return s ? { 'X-Svc-Admin-Secret': s } : {};
}

export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly body: unknown,
  ) {
    super(message);
  }
}

async function post(path: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: any }> {
  const r = await fetch(path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...adminHeaders(), ...headers },
    body: JSON.stringify(body),
  });
  const text = await r.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    /* not JSON */
  }
  return { status: r.status, body: parsed };
}

/** Called when the server refuses the admin secret (it changed since the login): App logs out. */
let onRefused: (() => void) | undefined;
export function whenSecretRefused(f: (() => void) | undefined): void {
  onRefused = f;
}

function errorOf(status: number, body: any): ApiError {
  if (status === 401 && body && typeof body === 'object' && /admin-secret/.test(String(body.error)) && onRefused) onRefused();
  let msg = body && typeof body === 'object' && 'error' in body ? `${body.error}${body.code ? ` (${body.code})` : ''}` : `HTTP ${status}: ${typeof body === 'string' ? body : JSON.stringify(body)}`;
  // PostgreSQL's own words (run_sql's "query execution failed" keeps them in `internal`).
  const pg = body?.internal?.error;
  if (pg && typeof pg.message === 'string') msg += `: ${pg.message}${pg.description ? ` (${pg.description})` : ''}${pg.hint ? `; hint: ${pg.hint}` : ''}`;
  return new ApiError(msg, status, body);
}

/** Fired on `window` after a metadata call that may have changed the metadata (App's mark of
 * inconsistent objects looks again). */
export const METADATA_CHANGED = 'svc-metadata-changed';
const READS = /^(export_metadata|get_|pg_get_|introspect_)/;

/** One metadata API call; throws ApiError unless 200. */
export async function metadata<T = any>(type: string, args: unknown = {}, extra: Record<string, unknown> = {}): Promise<T> {
  const r = await post('/v1/metadata', { type, args, ...extra });
  if (r.status !== 200) throw errorOf(r.status, r.body);
  if (!READS.test(type)) dispatchEvent(new Event(METADATA_CHANGED));
  return r.body as T;
}

/** Several metadata operations at once, all or none (`bulk`). */
export async function bulk(ops: { type: string; args: unknown }[]): Promise<unknown[]> {
  return metadata<unknown[]>('bulk', ops);
}

export interface SqlResult {
  result_type: 'TuplesOk' | 'CommandOk';
  result: string[][] | null;
}

let queryPath: string | undefined;

/** run_sql: on /v2/query, as Hasura v2's console does; /v1/query (legacy) where /v2/query is absent. */
export async function runSql(sql: string, opts: { source?: string; cascade?: boolean; read_only?: boolean } = {}): Promise<SqlResult> {
  const body = { type: 'run_sql', args: { source: opts.source ?? 'default', sql, cascade: opts.cascade ?? false, read_only: opts.read_only ?? false } };
  const path = queryPath ?? '/v2/query';
  let r = await post(path, body);
  if (r.status === 404 && path === '/v2/query') {
    // Requests sent at the same time all find out; each one retries.
    queryPath = '/v1/query';
    r = await post(queryPath, body);
  } else if (queryPath === undefined) queryPath = path;
  if (r.status !== 200) throw errorOf(r.status, r.body);
  return r.body as SqlResult;
}

/** Rows of a run_sql result as objects keyed by column. */
export function rowsOf(r: SqlResult): Record<string, string>[] {
  if (!r.result || r.result.length === 0) return [];
  const [head, ...rows] = r.result;
  return rows.map((row) => Object.fromEntries(head!.map((h, i) => [h, row[i]!])));
}

/** A SQL string literal. */
export function lit(s: string): string {
  return `'${s.replace(/'/g, "''")}'`;
}

/** POST /v1/graphql with the admin secret and `headers` (which may override it). */
export async function graphql(query: string, variables?: Record<string, unknown>, headers: Record<string, string> = {}): Promise<any> {
  const r = await post('/v1/graphql', { query, variables }, headers);
  if (r.status !== 200) throw errorOf(r.status, r.body);
  if (r.body && r.body.errors) throw new ApiError(r.body.errors.map((e: { message: string }) => e.message).join('; '), 200, r.body);
  return r.body.data;
}

/** Whether the secret is the server's admin secret (or the server has none): export_metadata is admin only. */
export async function checkSecret(): Promise<void> {
  await metadata('export_metadata', {}, { version: 1 });
}

// ---------------------------------------------------------------------------------------------
// The metadata document, as export_metadata gives it.

export interface QualifiedTable {
  schema: string;
  name: string;
}
export interface TableEntry {
  table: QualifiedTable;
  configuration?: { custom_name?: string; custom_root_fields?: Record<string, string>; column_config?: Record<string, { custom_name?: string }> };
  object_relationships?: { name: string; using: unknown; comment?: string }[];
  array_relationships?: { name: string; using: unknown; comment?: string }[];
  insert_permissions?: { role: string; permission: any }[];
  select_permissions?: { role: string; permission: any }[];
  update_permissions?: { role: string; permission: any }[];
  delete_permissions?: { role: string; permission: any }[];
  event_triggers?: { name: string; definition: unknown; webhook?: string; webhook_from_env?: string }[];
}
export interface SourceEntry {
  name: string;
  kind: string;
  tables: TableEntry[];
  functions?: unknown[];
}
export type HeaderConf = { name: string; value: string } | { name: string; value_from_env: string };

export interface RemoteSchemaEntry {
  name: string;
  definition: { url?: string; url_from_env?: string; headers?: HeaderConf[]; forward_client_headers?: boolean; timeout_seconds?: number; customization?: unknown };
  comment?: string;
  permissions?: { role: string; definition: { schema: string }; comment?: string }[];
}
export interface ActionEntry {
  name: string;
  definition: {
    handler: string;
    output_type: string;
    arguments?: { name: string; type: string; description?: string }[];
    headers?: HeaderConf[];
    forward_client_headers?: boolean;
    type: 'query' | 'mutation';
    kind?: 'synchronous' | 'asynchronous';
    timeout?: number;
  };
  comment?: string;
  permissions?: { role: string; comment?: string }[];
}
export interface FieldDef {
  name: string;
  type: string;
  description?: string;
}
export interface CustomTypes {
  input_objects?: { name: string; description?: string; fields: FieldDef[] }[];
  objects?: { name: string; description?: string; fields: FieldDef[]; relationships?: unknown[] }[];
  scalars?: { name: string; description?: string }[];
  enums?: { name: string; description?: string; values: { value: string; description?: string; is_deprecated?: boolean }[] }[];
}
export interface RestEndpointEntry {
  name: string;
  url: string;
  methods: string[];
  definition: { query: { collection_name: string; query_name: string } };
  comment?: string;
}
export interface CollectionEntry {
  name: string;
  comment?: string;
  definition: { queries: { name: string; query: string }[] };
}
export type AllowlistScope = { global: true } | { global: false; roles: string[] };
export interface MetadataDoc {
  version: number;
  sources?: SourceEntry[];
  remote_schemas?: RemoteSchemaEntry[];
  actions?: ActionEntry[];
  custom_types?: CustomTypes;
  rest_endpoints?: RestEndpointEntry[];
  query_collections?: CollectionEntry[];
  allowlist?: { collection: string; scope?: AllowlistScope }[];
  inherited_roles?: { role_name: string; role_set: string[]; comment?: string }[];
  cron_triggers?: unknown[];
  [k: string]: unknown;
}

export function exportMetadata(): Promise<MetadataDoc> {
  return metadata<MetadataDoc>('export_metadata', {}, { version: 1 });
}

/** The server's settings that pages depend on (GET /v1alpha1/config, admin only). */
export interface ServerConfig {
  is_remote_schema_permissions_enabled?: boolean;
  is_allow_list_enabled?: boolean;
  [k: string]: unknown;
}
export async function serverConfig(): Promise<ServerConfig> {
  const r = await fetch('/v1alpha1/config', { headers: adminHeaders() });
  const body = await r.json().catch(() => undefined);
  if (r.status !== 200) throw errorOf(r.status, body);
  return body as ServerConfig;
}

/** Every role named anywhere in the metadata (table, remote schema and action permissions,
 * inherited roles), sorted: the roles a page offers to pick from. */
export function knownRoles(md: MetadataDoc): string[] {
  const all = new Set<string>();
  for (const s of md.sources ?? [])
    for (const t of s.tables) for (const op of ['insert', 'select', 'update', 'delete'] as const) for (const p of t[`${op}_permissions`] ?? []) all.add(p.role);
  for (const r of md.remote_schemas ?? []) for (const p of r.permissions ?? []) all.add(p.role);
  for (const a of md.actions ?? []) for (const p of a.permissions ?? []) all.add(p.role);
  for (const r of md.inherited_roles ?? []) {
    all.add(r.role_name);
    for (const x of r.role_set) all.add(x);
  }
  all.delete('admin');
  return [...all].sort();
}

/** The table's tracked entry in a source, if tracked. */
export function tableEntry(md: MetadataDoc, source: string, t: QualifiedTable): TableEntry | undefined {
  const s = md.sources?.find((x) => x.name === source);
  return s?.tables.find((e) => normTable(e.table).schema === t.schema && normTable(e.table).name === t.name);
}

/** A table reference as metadata may write it (a bare name is in `public`). */
export function normTable(t: unknown): QualifiedTable {
  if (typeof t === 'string') return { schema: 'public', name: t };
  const o = t as { schema?: string; name: string };
  return { schema: o.schema ?? 'public', name: o.name };
}

/** The root field that selects the table's rows for the admin (Hasura's default naming). */
export function selectRootField(entry: TableEntry): string {
  const c = entry.configuration;
  if (c?.custom_root_fields?.select) return c.custom_root_fields.select;
  if (c?.custom_name) return c.custom_name;
  const t = normTable(entry.table);
  return t.schema === 'public' ? t.name : `${t.schema}_${t.name}`;
}

/** The GraphQL name of a column. */
export function columnField(entry: TableEntry, column: string): string {
  return entry.configuration?.column_config?.[column]?.custom_name ?? column;
}

// ---------------------------------------------------------------------------------------------
// A project's console (`svc console`, Note [The console of a project] in server/cli/console-server.ts).

/** What `svc console` says of its project; null when the engine serves the console itself. */
export interface CliProject {
  cli: 'svc';
  project: string;
  metadata_directory: string;
  migrations_directory: string;
}

let cli: Promise<CliProject | null> | undefined;

/** Whether the console runs from a CLI project (asked once: GET /apis/project, which only the
 * CLI's server answers). */
export function cliProject(): Promise<CliProject | null> {
  return (cli ??= fetch('/apis/project').then(
    async (r) => {
      if (r.status !== 200) return null;
      const b = await r.json().catch(() => null);
      return b && b.cli === 'svc' ? (b as CliProject) : null;
    },
    () => null,
  ));
}

/** SQL run as a migration of the project: written to migrations/<source>/<version>_<name>/ and
 * applied with its record, or neither. */
export async function runMigration(m: { source: string; name: string; up: string; down?: string; cascade?: boolean }): Promise<{ version: string; name: string; directory: string; files: string[] }> {
  const r = await post('/apis/migrate', m);
  if (r.status !== 200) throw errorOf(r.status, r.body);
  dispatchEvent(new Event(METADATA_CHANGED));
  return r.body;
}

/** A migration's name from what it changes (letters, digits, `_`, `-`, `.`), as Hasura names them:
 * create_table_public_author. */
export function migrationName(...parts: string[]): string {
  return parts
    .join('_')
    .replace(/[^\w.-]+/g, '_')
    .slice(0, 120);
}
