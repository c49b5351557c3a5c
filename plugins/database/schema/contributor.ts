/**
 * The database plugin's schema contributor: for a role, the select root fields of every tracked
 * table it may select (admin: all), as Hasura v2 names them, each planning through plan.ts.
 */
import { GraphQLList, GraphQLNonNull, type GraphQLFieldConfig } from 'graphql';
import type { BuildResult, RootFieldDef, SchemaContribution, SchemaContributorDef, TypeRegistry } from '../../../core/plugin.js';
import type { DatabaseService } from '../model/service.js';
import { planRootField, type RootKind } from './plan.js';
import { RoleSchema, type RoleTable } from './role.js';

/** Hasura's admin role: every table, no permission. */
export const ADMIN_ROLE = 'admin';

export function roleSchema(db: DatabaseService, role: string, build: BuildResult, types: TypeRegistry): RoleSchema {
  return new RoleSchema(role, role === ADMIN_ROLE, db.resolved(build).sources.values(), types);
}

export function tableRootFields(rs: RoleSchema): Record<string, RootFieldDef> {
  const query: Record<string, RootFieldDef> = {};
  const add = (kind: RootKind, t: RoleTable, config: Omit<GraphQLFieldConfig<unknown, unknown>, 'resolve' | 'subscribe'>) => {
    const allowed = t.perm?.queryRootFields;
    if (allowed && !allowed.includes(kind)) return;
    const rf = t.model.rootFields[kind];
    query[rf.name] = {
      config: rf.comment ? { ...config, description: rf.comment } : config,
      plan: (input) => planRootField(kind, t, rs, input),
    };
  };
  for (const t of rs.tables.values()) {
    const table = t.model.table.name;
    add('select', t, { type: new GraphQLNonNull(new GraphQLList(new GraphQLNonNull(rs.object(t)))), args: rs.selectArgs(t), description: `fetch data from the table: "${table}"` });
    const pk = rs.pkArgs(t);
    if (pk) add('select_by_pk', t, { type: rs.object(t), args: pk, description: `fetch data from the table: "${table}" using primary key columns` });
    if (t.aggregates) add('select_aggregate', t, { type: new GraphQLNonNull(rs.aggregate(t)), args: rs.selectArgs(t), description: `fetch aggregated fields from the table: "${table}"` });
  }
  return query;
}

export function databaseContributor(db: DatabaseService): SchemaContributorDef {
  return {
    name: 'tables',
    contribute(role, build, types): SchemaContribution {
      return { query: tableRootFields(roleSchema(db, role, build, types)) };
    },
  };
}
