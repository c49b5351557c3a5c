/**
 * An asynchronous action's result as a subscription over a real WebSocket: the entry at once
 * (no output yet), then again when the handler's answer is stored.
 */
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { useServer } from '../../test/helpers.js';
import { Client, useListening } from '../../test/ws-helpers.js';
import { startHandler, type TestHandler } from './testing.js';

const s = useServer(undefined, { config: { liveQueriesRefetchInterval: 40, asyncActionsFetchInterval: 50 } });
const net = useListening(s);
afterEach(() => Client.closeAll());

let h: TestHandler;
let release: () => void = () => {};
beforeAll(async () => {
  const answered = new Promise<void>((r) => (release = r));
  h = await startHandler({
    '/do': async (_c, res) => {
      await answered;
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"n": 7}');
    },
  });
  s.env.HANDLER = h.url;
  const r = await s.query({
    type: 'bulk',
    args: [
      { type: 'set_custom_types', args: { objects: [{ name: 'Out', fields: [{ name: 'n', type: 'Int!' }] }] } },
      { type: 'create_action', args: { name: 'work', definition: { kind: 'asynchronous', output_type: 'Out', handler: '{{HANDLER}}/do' } } },
    ],
  });
  expect(r.status, r.text).toBe(200);
});
afterAll(async () => {
  release();
  await h?.close();
});

it('graphql-transport-ws: the entry at once, then with its output once the handler answered', async () => {
  const id = (await s.gql('mutation { work }')).data.work as string;
  const c = await Client.init(net.url, 'graphql-transport-ws', {});
  c.send({ type: 'subscribe', id: 'r', payload: { query: 'subscription ($id: uuid!) { work(id: $id) { id output { n } errors } }', variables: { id } } });
  expect(await c.next('r')).toEqual({ type: 'next', id: 'r', payload: { data: { work: { id, output: null, errors: null } } } });
  release();
  expect(await c.next('r', 10_000)).toEqual({ type: 'next', id: 'r', payload: { data: { work: { id, output: { n: 7 }, errors: null } } } });
});
