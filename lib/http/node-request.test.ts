/**
 * An answer written to Node's response as a stream (nodeAnswer): every byte arrives through a
 * slow reader, and waiting for the socket to drain leaves no listener behind.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { nodeAnswer } from './node-request.js';

const SLICE = 1024 * 1024;
const SLICES = 48;

describe('nodeAnswer', () => {
  it('streams a long answer to a slow reader, each wait for drain taking its listeners with it', async () => {
    const closeListeners: number[] = [];
    const server = http.createServer((_req, res) => {
      let sent = 0;
      const body = new ReadableStream<Uint8Array>({
        pull(controller) {
          closeListeners.push(res.listenerCount('close'));
          controller.enqueue(new Uint8Array(SLICE).fill(48 + (sent % 10)));
          if (++sent === SLICES) controller.close();
        },
      });
      void nodeAnswer(res, { status: 200, contentType: 'application/octet-stream', body });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const { port } = server.address() as AddressInfo;
      const received = await new Promise<Buffer[]>((resolve, reject) => {
        http
          .get({ host: '127.0.0.1', port, path: '/' }, (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (c: Buffer) => {
              chunks.push(c);
              // Reads slowly, so that the server's writes wait for the socket to drain.
              res.pause();
              setTimeout(() => res.resume(), 1);
            });
            res.on('end', () => resolve(chunks));
            res.on('error', reject);
          })
          .on('error', reject);
      });
      const all = Buffer.concat(received);
      expect(all.length).toBe(SLICE * SLICES);
      for (let i = 0; i < SLICES; i++) expect(all[i * SLICE], `slice ${i}`).toBe(48 + (i % 10));
      expect(closeListeners).toHaveLength(SLICES);
      // At most Node's own, nodeAnswer's `gone` and one wait for drain: each wait removes its
      // close listener when done (they had grown by one a slice).
      expect(Math.max(...closeListeners), JSON.stringify(closeListeners)).toBeLessThanOrEqual(3);
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });
});
