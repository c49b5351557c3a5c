/**
 * A Hasura CLI project directory: `config.yaml` (endpoint, admin_secret, the metadata, migrations
 * and seeds directories), and the connection to the engine it is applied to.
 */
import { existsSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Origins, ProjectError, loadYamlFile } from './yaml-files.js';
import { readMetadataDir, readMetadataFile, type Loaded } from './metadata-dir.js';

export interface ProjectConfig {
  root: string;
  endpoint?: string;
  adminSecret?: string;
  metadataDirectory: string;
  migrationsDirectory: string;
  seedsDirectory: string;
}

/** Reads `<dir>/config.yaml` when there is one (the Hasura CLI's; only the keys used here). */
export function readProject(dir: string): ProjectConfig {
  const root = resolve(dir);
  const cfg: ProjectConfig = { root, metadataDirectory: 'metadata', migrationsDirectory: 'migrations', seedsDirectory: 'seeds' };
  const file = join(root, 'config.yaml');
  if (!existsSync(file)) return cfg;
  const c = loadYamlFile(file, root, new Origins()) as Record<string, unknown> | null;
  if (!c) return cfg;
  const str = (k: string) => (typeof c[k] === 'string' && c[k] !== '' ? (c[k] as string) : undefined);
  cfg.endpoint = str('endpoint');
  cfg.adminSecret = str('admin_secret');
  cfg.metadataDirectory = str('metadata_directory') ?? cfg.metadataDirectory;
  cfg.migrationsDirectory = str('migrations_directory') ?? cfg.migrationsDirectory;
  cfg.seedsDirectory = str('seeds_directory') ?? cfg.seedsDirectory;
  return cfg;
}

/**
 * The metadata of a project, from the first of: `file` (a single JSON or YAML document), the
 * metadata directory (`<root>/metadata/version.yaml`), a single `<root>/metadata.json|yaml|yml`,
 * or `root` itself when it is a metadata directory.
 */
export function loadProjectMetadata(p: ProjectConfig, file?: string): Loaded {
  if (file) return readMetadataFile(resolve(file), p.root);
  const mdDir = join(p.root, p.metadataDirectory);
  if (existsSync(join(mdDir, 'version.yaml'))) return readMetadataDir(mdDir, p.root);
  for (const ext of ['json', 'yaml', 'yml']) {
    const single = `${mdDir}.${ext}`;
    if (existsSync(single) && statSync(single).isFile()) return readMetadataFile(single, p.root);
  }
  if (existsSync(join(p.root, 'version.yaml'))) return readMetadataDir(p.root, p.root);
  throw new ProjectError(`no metadata in ${p.root}: expected ${p.metadataDirectory}/version.yaml (the directory format), or ${p.metadataDirectory}.json / ${p.metadataDirectory}.yaml`);
}
