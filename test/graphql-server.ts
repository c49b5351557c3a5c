/**
 * A GraphQL server on loopback for tests (node:http + graphql-js): what the engine talks to as a
 * remote schema. It records every request but introspection, so that a test can count the
 * engine's calls (one per remote and level of a join) and read what it sent.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { graphql, type GraphQLSchema } from 'graphql';

export interface TestGraphQLServer {
  server: Server;
  /** http://127.0.0.1:<port>/graphql */
  url: string;
  /** The bodies of the requests received, introspection left out, in order. */
  bodies: { query: string; variables?: Record<string, unknown>; operationName?: string }[];
  close(): Promise<void>;
}

export async function serveGraphQL(schema: GraphQLSchema, rootValue: Record<string, unknown>): Promise<TestGraphQLServer> {
  const bodies: TestGraphQLServer['bodies'] = [];
  const server = createServer(async (req, res) => {
    let text = '';
    for await (const c of req) text += c;
    const body = JSON.parse(text);
    if (body.operationName !== 'IntrospectionQuery') bodies.push(body);
    const result = await graphql({ schema, source: body.query, variableValues: body.variables, operationName: body.operationName, rootValue });
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(result));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    server,
    bodies,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/graphql`,
    close: () => new Promise((r) => server.close(() => r())),
  };
}
