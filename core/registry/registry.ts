/**
 * The operation table: name -> definition, separately for /v1/metadata and /v1/query (legacy
 * names). Operations of disabled plugins are remembered so that calling one gets `not-supported`.
 */
import type { Endpoint, OperationDef } from '../plugin.js';
import { SvcError } from '../errors.js';

export interface RegisteredOp {
  def: OperationDef;
  plugin: string;
}

export class OperationRegistry {
  private readonly tables: Record<Endpoint, Map<string, RegisteredOp>> = { metadata: new Map(), query: new Map() };
  private readonly disabled: Record<Endpoint, Map<string, string>> = { metadata: new Map(), query: new Map() };

  add(def: OperationDef, plugin: string): void {
    const put = (ep: Endpoint, name: string) => {
      const t = this.tables[ep];
      const prev = t.get(name);
      if (prev) throw new Error(`operation "${name}" is registered by both "${prev.plugin}" and "${plugin}"`);
      t.set(name, { def, plugin });
    };
    if (def.type) put('metadata', def.type);
    if (def.legacy) put('query', def.legacy);
  }

  /** Records the names of an operation of a disabled plugin (see Note [Disabled plugins] in
   * core/kernel/kernel.ts); a name an enabled plugin registers is served all the same. */
  addDisabled(def: OperationDef, plugin: string): void {
    if (def.type) this.disabled.metadata.set(def.type, plugin);
    if (def.legacy) this.disabled.query.set(def.legacy, plugin);
  }

  find(endpoint: Endpoint, type: string): RegisteredOp {
    const hit = this.tables[endpoint].get(type);
    if (hit) return hit;
    const plugin = this.disabled[endpoint].get(type);
    if (plugin) {
      throw new SvcError('not-supported', `operation "${type}" is not supported: the plugin "${plugin}" is disabled`, {
        path: '$.type',
      });
    }
    throw new SvcError('parse-failed', `unknown operation type "${type}"`, { path: '$.type' });
  }

  /** Every registered operation, once. */
  definitions(): OperationDef[] {
    const out = new Set<OperationDef>();
    for (const t of Object.values(this.tables)) for (const r of t.values()) out.add(r.def);
    return [...out];
  }

  /** Whether some operation of the endpoint is open to roles other than admin. */
  openToRoles(endpoint: Endpoint): boolean {
    for (const r of this.tables[endpoint].values()) if (r.def.adminOnly === false) return true;
    return false;
  }

  names(endpoint: Endpoint): string[] {
    return [...this.tables[endpoint].keys()];
  }
}
