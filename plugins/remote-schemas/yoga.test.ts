/**
 * A remote schema served by another tool than the engine's own graphql-js servers: GraphQL Yoga
 * (graphql-yoga, a devDependency installed for this), so that the engine is shown to talk to a
 * server it did not write. Stitching with a customization (the request in the remote's names, the
 * answer in ours, `__typename` included), a mutation, the remote's errors with their path and
 * extensions, variables, forwarded headers and session variables, and a remote relationship from
 * a table joined in one request per level.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { GraphQLError } from 'graphql';
import { createSchema, createYoga } from 'graphql-yoga';
import { useServer } from '../../test/helpers.js';

interface Seen {
  queries: string[];
  headers: IncomingHttpHeaders[];
}

const seen: Seen = { queries: [], headers: [] };
const books = new Map<number, { id: number; title: string; year: number }>([
  [1, { id: 1, title: 'Dune', year: 1965 }],
  [2, { id: 2, title: 'Solaris', year: 1961 }],
]);

const schema = createSchema({
  typeDefs: /* GraphQL */ `
    interface Node { id: Int! }
    type Book implements Node { id: Int! title: String! year: Int }
    type Query {
      book(id: Int!): Book
      books(ids: [Int!]): [Book!]!
      node(id: Int!): Node
      whoami: String
      fails: String
    }
    type Mutation { renameBook(id: Int!, title: String!): Book }
  `,
  resolvers: {
    Node: { __resolveType: () => 'Book' },
    Query: {
      book: (_: unknown, { id }: { id: number }) => books.get(id) ?? null,
      books: (_: unknown, { ids }: { ids?: number[] }) => (ids ?? [...books.keys()]).flatMap((id) => (books.has(id) ? [books.get(id)!] : [])),
      node: (_: unknown, { id }: { id: number }) => books.get(id) ?? null,
      whoami: (_: unknown, __: unknown, ctx: { request: Request }) => `${ctx.request.headers.get('x-svc-role')}:${ctx.request.headers.get('x-svc-user-id')}:${ctx.request.headers.get('x-client')}`,
      fails: () => {
        throw new GraphQLError('the shelf is empty', { extensions: { code: 'EMPTY_SHELF' } });
      },
    },
    Mutation: {
      renameBook: (_: unknown, { id, title }: { id: number; title: string }) => {
        const b = books.get(id);
        if (!b) return null;
        b.title = title;
        return b;
      },
    },
  },
});

let yogaServer: Server;
let url = '';
const s = useServer(`
  create table review (id serial primary key, book_id int not null, stars int not null);
  insert into review (book_id, stars) values (1, 5), (2, 4), (1, 3), (3, 1);
`);

beforeAll(async () => {
  const yoga = createYoga({
    schema,
    graphqlEndpoint: '/graphql',
    logging: false,
    maskedErrors: false,
    plugins: [
      {
        onParams({ params }: { params: { query?: string; operationName?: string } }) {
          if (params.operationName !== 'IntrospectionQuery' && params.query && !params.query.includes('__schema')) seen.queries.push(params.query);
        },
      },
    ],
  });
  yogaServer = createServer((req, res) => {
    seen.headers.push(req.headers);
    void yoga(req, res);
  });
  await new Promise<void>((r) => yogaServer.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(yogaServer.address() as AddressInfo).port}/graphql`;
});
afterAll(async () => {
  await new Promise((r) => yogaServer?.close(r));
});

const meta = (body: unknown) => s.metadata(body);

describe('a remote schema served by GraphQL Yoga', () => {
  it('is added and stitched with a customization in both directions', async () => {
    const r = await meta({
      type: 'add_remote_schema',
      args: { name: 'library', definition: { url, forward_client_headers: true, customization: { type_names: { prefix: 'Lib_' }, field_names: [{ parent_type: 'Query', prefix: 'lib_' }] } } },
    });
    expect(r.body).toEqual({ message: 'success' });
    seen.queries.length = 0;
    const q = await s.gql('query($id: Int!) { lib_book(id: $id) { __typename id title } lib_node(id: 2) { __typename ... on Lib_Book { title } } }', { id: 1 });
    expect(q).toEqual({ data: { lib_book: { __typename: 'Lib_Book', id: 1, title: 'Dune' }, lib_node: { __typename: 'Lib_Book', title: 'Solaris' } } });
    // The remote was asked in its own names (the client's names stay only as aliases).
    const sent = seen.queries.join('\n');
    expect(sent).toMatch(/lib_book: book\(id: /);
    expect(sent).toMatch(/\.\.\. on Book\b/);
    expect(sent).not.toMatch(/Lib_/);
  });

  it('runs a mutation, and gives the remote errors with their path and extensions', async () => {
    // The field-name prefix is the Query type's only (field_names is per parent type).
    const m = await s.gql('mutation { renameBook(id: 2, title: "Solaris (1961)") { __typename title } }');
    expect(m).toEqual({ data: { renameBook: { __typename: 'Lib_Book', title: 'Solaris (1961)' } } });
    const e = await s.gql('{ lib_fails }');
    expect(e.errors).toHaveLength(1);
    expect(e.errors[0]).toMatchObject({ message: 'the shelf is empty', path: ['lib_fails'], extensions: { code: 'EMPTY_SHELF' } });
  });

  it('forwards the client headers and the session variables', async () => {
    const r = await s.gql('{ lib_whoami }', undefined, { 'x-svc-role': 'admin', 'x-svc-user-id': '42', 'x-client': 'web' });
    expect(r).toEqual({ data: { lib_whoami: 'admin:42:web' } });
  });

  it('joins a table to it in one request per level', async () => {
    expect((await meta({ type: 'pg_track_table', args: { table: 'review' } })).status).toBe(200);
    const rel = await meta({
      type: 'pg_create_remote_relationship',
      args: { table: 'review', name: 'book', definition: { to_remote_schema: { remote_schema: 'library', lhs_fields: ['book_id'], remote_field: { book: { arguments: { id: '$book_id' } } } } } },
    });
    expect(rel.body).toEqual({ message: 'success' });
    seen.queries.length = 0;
    const r = await s.gql('{ review(order_by: {id: asc}) { stars book { title } } }');
    expect(r).toEqual({
      data: {
        review: [
          { stars: 5, book: { title: 'Dune' } },
          { stars: 4, book: { title: 'Solaris (1961)' } },
          { stars: 3, book: { title: 'Dune' } },
          { stars: 1, book: null },
        ],
      },
    });
    expect(seen.queries).toHaveLength(1);
  });
});
