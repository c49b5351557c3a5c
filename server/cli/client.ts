/**
 * The engine's admin APIs as the CLI calls them: POST /v1/metadata and /v2/query with the admin
 * secret in `X-Svc-Admin-Secret`.
 */

/** An error answer of the engine: its status and body (`{path, error, code, internal?}`). */
export class ApiError extends Error {
  constructor(readonly status: number, readonly body: any) {
    super(describe(status, body));
  }
}

/** The engine's error as one line; a database error with PostgreSQL's own message (the engine
 * answers "query execution failed" and puts PostgreSQL's in `internal.error`). */
function describe(status: number, body: any): string {
  if (!body || typeof body !== 'object' || !('error' in body)) return `HTTP ${status}: ${typeof body === 'string' ? body : JSON.stringify(body)}`;
  const pg = body.internal && !Array.isArray(body.internal) ? body.internal.error : undefined;
  const detail = pg && typeof pg.message === 'string' ? `: ${pg.message}${pg.description ? ` (${pg.description})` : ''}` : '';
  return `${body.error}${detail} (${body.code ?? status}${body.path ? ` at ${body.path}` : ''})`;
}

export class Client {
  constructor(readonly endpoint: string, readonly adminSecret?: string) {}

  async post(path: string, body: unknown): Promise<any> {
    const url = this.endpoint.replace(/\/+$/, '') + path;
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (this.adminSecret) headers['x-svc-admin-secret'] = this.adminSecret;
    let res: Response;
    try {
      res = await fetch(url, { method: 'POST', headers, body: JSON.stringify(body) });
    } catch (e) {
      const cause = (e as { cause?: { code?: string; message?: string } }).cause;
      throw new Error(`cannot reach the engine at ${this.endpoint}: ${cause?.code ?? cause?.message ?? (e as Error).message}`);
    }
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      /* not JSON: kept as text */
    }
    if (res.status !== 200) throw new ApiError(res.status, parsed);
    return parsed;
  }

  metadata(type: string, args: unknown = {}, version?: number): Promise<any> {
    return this.post('/v1/metadata', version === undefined ? { type, args } : { type, version, args });
  }

  query(body: unknown): Promise<any> {
    return this.post('/v2/query', body);
  }

  /** run_sql on a source (one transaction, as the engine runs it). */
  runSql(source: string, sql: string, readOnly = false): Promise<any> {
    return this.query({ type: 'run_sql', args: readOnly ? { source, sql, read_only: true } : { source, sql } });
  }
}
