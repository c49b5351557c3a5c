/**
 * Test harness: runs a GraphQL request through the database plugin's root fields the way the
 * core engine does (parse, validate against the role's schema, plan each root field, run the
 * plans, splice their texts), for tests written before `/v1/graphql` served the new engine.
 * Introspection fields go through graphql-js.
 */
import {
  execute,
  GraphQLObjectType,
  GraphQLSchema,
  GraphQLString,
  Kind,
  parse,
  validate,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLNamedType,
  type OperationDefinitionNode,
} from 'graphql';
import { SvcError } from '../../../core/errors.js';
import type { FieldPlan, Session, TypeRegistry } from '../../../core/plugin.js';
import type { TestServer } from '../../../test/helpers.js';

function registry(): TypeRegistry {
  const named = new Map<string, GraphQLNamedType>();
  return {
    define: (t) => {
      if (named.has(t.name) && named.get(t.name) !== t) throw new Error(`type ${t.name} defined twice`);
      named.set(t.name, t);
      return t;
    },
    get: (n) => named.get(n),
    extend: () => {},
    extensions: () => ({}),
  };
}

export function schemaOf(server: TestServer, role: string) {
  const build = server.kernel.state().build;
  const contributor = server.kernel.contributors.find((c) => c.plugin === 'database')!;
  const part = contributor.contribute(role, build, registry());
  const query = part.query ?? {};
  const placeholder = Object.keys(query).length ? {} : { no_queries_available: { type: GraphQLString } };
  const schema = new GraphQLSchema({
    query: new GraphQLObjectType({ name: 'query_root', fields: { ...placeholder, ...Object.fromEntries(Object.entries(query).map(([k, f]) => [k, f.config])) } as never }),
  });
  return { schema, query, build };
}

function sessionOf(headers: Record<string, string>): Session {
  const variables: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) if (k.toLowerCase().startsWith('x-svc-')) variables[k.toLowerCase()] = v;
  const role = variables['x-svc-role'] ?? 'admin';
  return { role, variables, isAdmin: role === 'admin' };
}

/** The response body of a GraphQL request, as text, as the engine would send it. */
export async function graphql(server: TestServer, body: { query: string; variables?: Record<string, unknown>; operationName?: string }, headers: Record<string, string> = {}): Promise<any> {
  const session = sessionOf(headers);
  const { schema, query, build } = schemaOf(server, session.role);
  let doc;
  try {
    doc = parse(body.query);
  } catch (e) {
    return { errors: [{ extensions: { path: '$', code: 'validation-failed' }, message: (e as Error).message }] };
  }
  const errs = validate(schema, doc);
  if (errs.length) return { errors: [{ extensions: { path: '$', code: 'validation-failed' }, message: errs[0]!.message }] };
  const op = doc.definitions.find((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION && (!body.operationName || d.name?.value === body.operationName))!;
  const fragments: Record<string, FragmentDefinitionNode> = {};
  for (const d of doc.definitions) if (d.kind === Kind.FRAGMENT_DEFINITION) fragments[d.name.value] = d;
  const fields = op.selectionSet.selections.filter((s): s is FieldNode => s.kind === Kind.FIELD);
  if (fields.some((f) => f.name.value.startsWith('__'))) {
    const r = await execute({ schema, document: doc, variableValues: body.variables, operationName: body.operationName });
    return JSON.parse(JSON.stringify(r));
  }
  const plans: [string, FieldPlan][] = fields.map((f) => [
    f.alias?.value ?? f.name.value,
    query[f.name.value]!.plan({ field: f, schema, fragments, variableDefinitions: op.variableDefinitions ?? [], role: session.role, build }),
  ]);
  try {
    const texts = await Promise.all(plans.map(([, p]) => p.run({ session, variables: body.variables ?? {}, headers: {} })));
    return JSON.parse(`{"data":{${plans.map(([k], i) => `${JSON.stringify(k)}:${texts[i]}`).join(',')}}}`);
  } catch (e) {
    if (!(e instanceof SvcError)) throw e;
    return { errors: [{ extensions: { path: e.path, code: e.code }, message: e.message }] };
  }
}
