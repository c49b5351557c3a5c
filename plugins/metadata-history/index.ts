/**
 * The metadata history: every committed version of the metadata kept (up to
 * `--metadata-history-limit`), and the operations that list, read, diff and roll back to them
 * (get_metadata_history, get_metadata_version, diff_metadata, rollback_metadata). Its tables sit
 * beside the catalog's and are written in the catalog's transactions, through the kernel's
 * catalog extension point (Note [Catalog extensions] in core/catalog/store.ts; Note [Metadata
 * history] in ./store.ts). Disabled (`--disable-plugins metadata-history`), nothing is recorded,
 * its operations answer `not-supported`, and the next instance with it enabled restarts the
 * history at the version it finds.
 */
import { definePlugin } from '../../core/plugin.js';
import { optionSchemas, type OptionValues } from '../../core/config.js';
import { HistoryStore } from './store.js';
import { registerHistoryOperations } from './operations.js';

export const METADATA_HISTORY_OPTIONS = {
  // How many committed versions the catalog keeps (0: none, and the history operations are
  // refused).
  metadataHistoryLimit: { flag: 'metadata-history-limit', env: 'SVC_GRAPHQL_METADATA_HISTORY_LIMIT', schema: optionSchemas.positiveInt, default: 1000 },
} as const;

declare module '../../core/config.js' {
  interface ServerConfig extends OptionValues<typeof METADATA_HISTORY_OPTIONS> {}
}

export type { VersionInfo } from './store.js';

export default definePlugin({
  name: 'metadata-history',
  options: METADATA_HISTORY_OPTIONS,
  setup(k) {
    const store = new HistoryStore(k.config.metadataHistoryLimit);
    store.attach(k.catalogExtension(store));
    registerHistoryOperations(k, store);
  },
});
