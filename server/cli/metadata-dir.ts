/**
 * The Hasura CLI's metadata directory format (config v3): the metadata document as a tree of
 * files, one per section, and one per tracked table and function:
 *
 *   metadata/version.yaml                       version: 3
 *   metadata/databases/databases.yaml           the sources, their tables and functions as includes
 *   metadata/databases/<db>/tables/tables.yaml  - "!include <schema>_<table>.yaml" per table
 *   metadata/databases/<db>/functions/functions.yaml
 *   metadata/actions.graphql, actions.yaml      see actions-graphql.ts
 *   metadata/<section>.yaml                     remote_schemas, cron_triggers, allow_list, ...
 *
 * A section this file does not know is written to, and read from, `<key>.yaml`, so that a newer
 * engine's sections survive a round trip.
 */
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, relative } from 'node:path';
import { joinActions, splitActions } from './actions-graphql.js';
import { Origins, ProjectError, include, loadYamlFile, toYaml } from './yaml-files.js';
import { TABLE_KEY_ORDER } from '../../plugins/database/index.js';

type Obj = Record<string, any>;

/** The sections with a file of their own: key -> [file, empty value], in the Hasura CLI's order. */
export const SECTION_FILES: [key: string, file: string, empty: () => unknown][] = [
  ['remote_schemas', 'remote_schemas.yaml', () => []],
  ['query_collections', 'query_collections.yaml', () => []],
  ['allowlist', 'allow_list.yaml', () => []],
  ['cron_triggers', 'cron_triggers.yaml', () => []],
  ['rest_endpoints', 'rest_endpoints.yaml', () => []],
  ['inherited_roles', 'inherited_roles.yaml', () => []],
  ['api_limits', 'api_limits.yaml', () => ({})],
  ['graphql_schema_introspection', 'graphql_schema_introspection.yaml', () => ({})],
  ['network', 'network.yaml', () => ({})],
  ['backend_configs', 'backend_configs.yaml', () => ({})],
  ['metrics_config', 'metrics_config.yaml', () => ({})],
  ['opentelemetry', 'opentelemetry.yaml', () => ({})],
];
const OWN = new Set(['version', 'sources', 'actions', 'custom_types', ...SECTION_FILES.map(([k]) => k)]);

const isEmpty = (x: unknown) =>
  x === undefined || x === null || (Array.isArray(x) ? x.length === 0 : typeof x === 'object' && Object.keys(x as object).length === 0);

/** A file name for a table or function: `<schema>_<name>.yaml`, as the Hasura CLI names them. */
function objectFileName(name: unknown): string {
  const parts =
    typeof name === 'string' ? [name] : Array.isArray(name) ? name.map(String) : name && typeof name === 'object' ? [(name as Obj).schema ?? (name as Obj).dataset, (name as Obj).name].filter((x) => x !== undefined).map(String) : ['object'];
  return `${parts.join('_').replace(/[/\\\0]/g, '_')}`;
}

function uniqueNames(names: string[]): string[] {
  const used = new Map<string, number>();
  return names.map((n) => {
    const k = n.toLowerCase(); // case-insensitive file systems
    const count = used.get(k) ?? 0;
    used.set(k, count + 1);
    return count === 0 ? `${n}.yaml` : `${n}_${count + 1}.yaml`;
  });
}

/*
 * Note [A stable key order]
 * The engine's export keeps a source's or a table's keys in the order they were last written
 * (a source added with pg_add_source has `functions` after `configuration`; the same source
 * after replace_metadata, in the order of the document), so the files would change with the
 * metadata's history, not only with the metadata. The tree is written with the Hasura CLI's order
 * for the keys it knows, and the rest after them in the engine's order: export -> apply ->
 * export gives the same files.
 */
const SOURCE_KEYS = ['name', 'kind', 'configuration', 'customization', 'health_check', 'tables', 'functions'];

function ordered(o: Obj, keys: readonly string[]): Obj {
  const rank = (k: string) => (keys.includes(k) ? keys.indexOf(k) : keys.length);
  return Object.fromEntries(Object.entries(o).sort(([a], [b]) => rank(a) - rank(b)));
}

/** The files of a metadata document, path (relative to the metadata directory) -> text. */
export function metadataToFiles(doc: Obj): Map<string, string> {
  const files = new Map<string, string>();
  files.set('version.yaml', toYaml({ version: 3 }));
  const sources: Obj[] = [];
  const dbDirs = uniqueNames(((doc.sources ?? []) as Obj[]).map((s) => objectFileName(String(s.name)))).map((f) => f.slice(0, -5));
  ((doc.sources ?? []) as Obj[]).forEach((src, i) => {
    const dir = dbDirs[i]!;
    const out: Obj = {};
    for (const [k, v] of Object.entries(ordered(src, SOURCE_KEYS))) {
      if (k === 'tables') {
        const tables = (v ?? []) as Obj[];
        const names = uniqueNames(tables.map((t) => objectFileName(t.table)));
        tables.forEach((t, j) => files.set(`databases/${dir}/tables/${names[j]}`, toYaml(ordered(t, TABLE_KEY_ORDER))));
        files.set(`databases/${dir}/tables/tables.yaml`, toYaml(names.map((n) => include(n))));
        out.tables = include(`${dir}/tables/tables.yaml`);
      } else if (k === 'functions') {
        const fns = (v ?? []) as Obj[];
        if (!fns.length) continue;
        const names = uniqueNames(fns.map((f) => objectFileName(f.function)));
        fns.forEach((f, j) => files.set(`databases/${dir}/functions/${names[j]}`, toYaml(f)));
        files.set(`databases/${dir}/functions/functions.yaml`, toYaml(names.map((n) => include(n))));
        out.functions = include(`${dir}/functions/functions.yaml`);
      } else out[k] = v;
    }
    if (!('tables' in out)) {
      files.set(`databases/${dir}/tables/tables.yaml`, toYaml([]));
      out.tables = include(`${dir}/tables/tables.yaml`);
    }
    sources.push(ordered(out, SOURCE_KEYS));
  });
  files.set('databases/databases.yaml', toYaml(sources));
  const actions = splitActions(doc.actions, doc.custom_types);
  files.set('actions.graphql', actions.graphql);
  files.set('actions.yaml', toYaml(actions.yaml));
  for (const [key, file, empty] of SECTION_FILES) files.set(file, toYaml(isEmpty(doc[key]) ? empty() : doc[key]));
  for (const [key, value] of Object.entries(doc)) {
    if (!OWN.has(key) && !isEmpty(value)) files.set(`${key}.yaml`, toYaml(value));
  }
  return files;
}

/**
 * Writes the tree into `metadataDir`, replacing the tree that was there (as `hasura metadata
 * export` does: a table no longer tracked loses its file). Only what this format is made of is
 * removed first (`databases/`, the `*.yaml` files and actions.graphql at the top), not the
 * directory: a `metadata_directory: .` in config.yaml must not cost the project its migrations.
 */
export function writeMetadataDir(metadataDir: string, doc: Obj): string[] {
  const files = metadataToFiles(doc);
  if (existsSync(metadataDir)) {
    rmSync(join(metadataDir, 'databases'), { recursive: true, force: true });
    for (const f of readdirSync(metadataDir)) {
      if ((f.endsWith('.yaml') && f !== 'config.yaml') || f === 'actions.graphql') rmSync(join(metadataDir, f), { force: true });
    }
  }
  for (const [path, text] of files) {
    const full = join(metadataDir, path);
    mkdirSync(dirname(full), { recursive: true });
    writeFileSync(full, text);
  }
  return [...files.keys()];
}

/** A loaded metadata document and where its values came from. */
export interface Loaded {
  doc: Obj;
  origins: Origins;
  /** What was read: a metadata directory or a single file. */
  from: string;
}

/** Reads a metadata directory (version.yaml at its top) into a metadata document. */
export function readMetadataDir(metadataDir: string, projectRoot: string): Loaded {
  const origins = new Origins();
  const load = (file: string) => loadYamlFile(join(metadataDir, file), projectRoot, origins);
  const shown = (file: string) => relative(projectRoot, join(metadataDir, file));
  const versionFile = join(metadataDir, 'version.yaml');
  if (!existsSync(versionFile)) throw new ProjectError(`${shown('version.yaml')} not found: not a metadata directory`);
  const v = load('version.yaml') as Obj | null;
  if (v?.version !== 3) {
    throw new ProjectError(`metadata version ${JSON.stringify(v?.version)} is not supported (only 3, the Hasura CLI's config v3 format)`, origins.locate(v, ['version']));
  }
  const doc: Obj = { version: 3 };
  origins.set(doc, { file: shown('version.yaml'), line: 1 });
  if (existsSync(join(metadataDir, 'databases/databases.yaml'))) {
    const sources = load('databases/databases.yaml');
    if (sources !== null && !Array.isArray(sources)) {
      throw new ProjectError('expected a list of databases', origins.of(sources) ?? { file: shown('databases/databases.yaml'), line: 1 });
    }
    doc.sources = sources ?? [];
    origins.setMember(doc, 'sources', { file: shown('databases/databases.yaml'), line: 1 });
  }
  const graphqlFile = join(metadataDir, 'actions.graphql');
  const hasActionsYaml = existsSync(join(metadataDir, 'actions.yaml'));
  if (hasActionsYaml || existsSync(graphqlFile)) {
    const y = hasActionsYaml ? (load('actions.yaml') as Obj | null) : null;
    const sdl = existsSync(graphqlFile) ? readFileSync(graphqlFile, 'utf8') : '';
    try {
      const joined = joinActions(sdl, y);
      if (joined.actions.length) doc.actions = joined.actions;
      if (Object.values(joined.custom_types).some((l) => (l as unknown[]).length)) doc.custom_types = joined.custom_types;
    } catch (e) {
      const line = (e as { line?: number }).line;
      throw new ProjectError((e as Error).message, { file: shown(line ? 'actions.graphql' : 'actions.yaml'), line: line ?? 1 });
    }
  }
  for (const [key, file] of SECTION_FILES) {
    if (!existsSync(join(metadataDir, file))) continue;
    const value = load(file);
    if (!isEmpty(value)) {
      doc[key] = value;
      origins.setMember(doc, key, { file: shown(file), line: 1 });
    }
  }
  // Sections this CLI has no name for: `<key>.yaml` (see the header).
  const known = new Set(['version.yaml', 'actions.yaml', ...SECTION_FILES.map(([, f]) => f)]);
  for (const entry of readdirSync(metadataDir).sort()) {
    if (!entry.endsWith('.yaml') || known.has(entry) || !statSync(join(metadataDir, entry)).isFile()) continue;
    const value = load(entry);
    if (!isEmpty(value)) {
      const key = basename(entry, '.yaml');
      doc[key] = value;
      origins.setMember(doc, key, { file: shown(entry), line: 1 });
    }
  }
  return { doc, origins, from: relative(projectRoot, metadataDir) || '.' };
}

/** Reads a single metadata document (JSON or YAML, as `export_metadata` gives it). */
export function readMetadataFile(file: string, projectRoot: string): Loaded {
  const origins = new Origins();
  const doc = loadYamlFile(file, projectRoot, origins);
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) {
    throw new ProjectError('expected a metadata document (an object)', { file: relative(projectRoot, file), line: 1 });
  }
  return { doc: doc as Obj, origins, from: relative(projectRoot, file) };
}

/** The document as the engine is given it: empty sections left out (the engine leaves them out
 * of its export too, so that export -> apply -> export gives the same tree). */
export function withoutEmptySections(doc: Obj): Obj {
  return Object.fromEntries(Object.entries(doc).filter(([k, v]) => k === 'version' || !isEmpty(v)));
}
