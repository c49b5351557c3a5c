/**
 * Fixtures for tests of the schema the kernel assembles from contributors, without a server
 * (core/schema/assembly.test.ts, plugins/graphql/validation.test.ts): an empty build, a root
 * field that plans nothing, a contributor of a plugin.
 */
import type { GraphQLFieldConfigArgumentMap } from 'graphql';
import type { BuildResult, RootFieldDef, SchemaContribution, TypeRegistry } from '../core/plugin.js';
import type { Contributor } from '../core/schema/assembly.js';

export const build = (): BuildResult => ({ metadata: { version: 3 }, inconsistencies: [], outputs: new Map(), schemas: new Map() });

export const field = (type: RootFieldDef['config']['type'], args?: GraphQLFieldConfigArgumentMap): RootFieldDef => ({
  config: { type, ...(args ? { args } : {}) },
  plan: () => ({ run: async () => 'null' }),
});

export const contributor = (plugin: string, contribute: (role: string, types: TypeRegistry) => SchemaContribution): Contributor => ({
  name: plugin,
  plugin,
  contribute: (role, _b, types) => contribute(role, types),
});
