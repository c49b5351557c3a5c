/**
 * One GraphQL WebSocket connection, in either protocol Hasura speaks (Note [GraphQL over
 * WebSocket]): its initialisation (authentication from `connection_init`), its operations
 * (queries and mutations answered once, subscriptions handed to the live queries), keep-alives,
 * and the bound on what it may have waiting to be sent.
 */
import { WebSocket, type RawData } from 'ws';
import type { Session } from '../../core/plugin.js';
import type { ServerConfig } from '../../core/config.js';
import { SvcError } from '../../core/errors.js';
import { errorDetail, type Logger } from '../../core/log.js';
import { checkJsonLimits } from '../../lib/http/body.js';
import { jsonTypeName } from '../../core/validation.js';
import { gqlError, type GqlError } from '../graphql/index.js';
import type { GraphQLEngine } from '../graphql/index.js';
import type { LiveHandle } from '../graphql/index.js';

/*
 * Note [GraphQL over WebSocket]
 * `/v1/graphql` upgrades to a WebSocket in one of two protocols, chosen by the client's
 * `Sec-WebSocket-Protocol` (Hasura's toWSSubProtocol; without one, the first):
 *   - `graphql-ws`, Apollo's subscriptions-transport-ws: connection_init -> connection_ack and
 *     `ka` keep-alives; start -> data... complete; stop; connection_terminate; errors of the
 *     protocol are `connection_error` messages and the connection stays;
 *   - `graphql-transport-ws`, the graphql-ws library's: connection_init -> connection_ack;
 *     ping/pong both ways; subscribe -> next... complete; complete from the client stops; errors
 *     of the protocol close the socket with a code: 4400 bad message, 4401 subscribe before the
 *     ack, 4403 init refused, 4408 no init in time, 4409 an id in use, 4429 a second init.
 * Both parse every message type (as Hasura does) and answer in their own words. The session
 * comes from `connection_init`: its payload's `headers` object (or, without one, the payload's
 * own string values) over the upgrade request's headers, through the same authentication as
 * HTTP; a refused init closes the socket (graphql-ws: connection_error, then 4400; graphql-
 * transport-ws: 4403). A request that fails before running (parse, validation, variables) is an
 * `error` message (graphql-ws adds `complete`); one that fails running is, in graphql-ws, a
 * `data` message with the errors and in graphql-transport-ws an `error` message, as Hasura
 * sends them. Live query refetch errors are `data`/`next` messages and the subscription goes on.
 *
 * A connection never buffers without bound: before each message, when more than
 * `--websocket-max-send-buffer` bytes wait to be written to the socket (a client that stopped
 * reading), the connection is dropped and its subscriptions stop. Oversized frames (over
 * `--max-request-body-size`) close the socket with 1009; frames past the JSON limits are bad
 * messages. None of it touches other connections.
 */

export type Protocol = 'graphql-ws' | 'graphql-transport-ws';

export interface ConnectionHost {
  readonly config: Pick<ServerConfig, 'maxJsonDepth' | 'maxListLength' | 'websocketKeepalive' | 'websocketConnectionInitTimeout' | 'websocketMaxSendBuffer'>;
  readonly log: Logger;
  readonly engine: GraphQLEngine;
  authenticate(headers: Headers, request?: unknown): Promise<Session>;
  closed(c: Connection): void;
  /** The client's IP address, for request gates (Note [Request gates] in plugins/graphql/contract.ts). */
  readonly clientAddress?: string;
}

type ClientMessage =
  | { type: 'connection_init'; payload: Record<string, unknown> | undefined }
  | { type: 'start'; id: string; payload: unknown }
  | { type: 'stop'; id: string }
  | { type: 'connection_terminate' }
  | { type: 'ping'; payload: unknown }
  | { type: 'pong' };

/** Hasura's words for a message it cannot parse (aeson's, `Error in $: ...`). */
function parseMessage(text: string, limits: ConnectionHost['config']): ClientMessage | string {
  let m: unknown;
  try {
    m = JSON.parse(text);
  } catch {
    return 'Error in $: not a valid json value';
  }
  try {
    checkJsonLimits(m, limits);
  } catch (e) {
    return `Error in ${(e as SvcError).path ?? '$'}: ${(e as Error).message}`;
  }
  if (!m || typeof m !== 'object' || Array.isArray(m)) return `Error in $: parsing ClientMessage failed, expected Object, but encountered ${jsonTypeName(m)}`;
  const o = m as Record<string, unknown>;
  if (o.type === undefined) return 'Error in $: key "type" not found';
  if (typeof o.type !== 'string') return `Error in $.type: parsing String failed, expected String, but encountered ${jsonTypeName(o.type)}`;
  const id = (): string | undefined => (typeof o.id === 'string' ? o.id : undefined);
  const idError = () => (o.id === undefined ? 'Error in $: key "id" not found' : `Error in $.id: parsing Text failed, expected String, but encountered ${jsonTypeName(o.id)}`);
  switch (o.type) {
    case 'connection_init': {
      const p = o.payload;
      if (p !== undefined && p !== null && (typeof p !== 'object' || Array.isArray(p))) return `Error in $.payload: parsing ConnParams failed, expected Object, but encountered ${jsonTypeName(p)}`;
      return { type: 'connection_init', payload: (p ?? undefined) as Record<string, unknown> | undefined };
    }
    case 'start':
    case 'subscribe': {
      const i = id();
      if (i === undefined) return idError();
      if (o.payload === undefined) return 'Error in $: key "payload" not found';
      return { type: 'start', id: i, payload: o.payload };
    }
    case 'stop':
    case 'complete': {
      const i = id();
      if (i === undefined) return idError();
      return { type: 'stop', id: i };
    }
    case 'connection_terminate':
      return { type: 'connection_terminate' };
    case 'ping':
      return { type: 'ping', payload: o.payload };
    case 'pong':
      return { type: 'pong' };
    default:
      return `Error in $: unexpected type for ClientMessage: ${o.type}`;
  }
}

/** The session's headers: the init payload's (its `headers` object, or its own string values)
 * first, then the upgrade request's. Throws SvcError for a `headers` that is not text to text. */
function initHeaders(payload: Record<string, unknown> | undefined, upgrade: readonly [string, string][]): Headers {
  const given = payload && typeof payload.headers === 'object' && payload.headers !== null && !Array.isArray(payload.headers) ? (payload.headers as Record<string, unknown>) : undefined;
  const out = new Headers();
  const seen = new Set<string>();
  const put = (k: string, v: string) => {
    const name = k.toLowerCase();
    if (seen.has(name)) return;
    seen.add(name);
    try {
      out.set(name, v);
    } catch {
      throw new SvcError('invalid-headers', `invalid header: ${JSON.stringify(k)}`);
    }
  };
  if (given) {
    for (const [k, v] of Object.entries(given)) {
      if (typeof v !== 'string') throw new SvcError('parse-failed', `parsing Text failed, expected String, but encountered ${jsonTypeName(v)}`, { path: `$.payload.headers.${k}` });
      put(k, v);
    }
  } else if (payload) {
    for (const [k, v] of Object.entries(payload)) if (typeof v === 'string') put(k, v);
  }
  for (const [k, v] of upgrade) put(k, v);
  return out;
}

/** A close reason fits in 123 bytes. */
function reason(text: string): string {
  let r = text;
  while (Buffer.byteLength(r) > 123) r = r.slice(0, -1);
  return r;
}

interface Operation {
  cancelled: boolean;
  live?: LiveHandle;
}

let nextId = 0;

export class Connection {
  readonly id = `${process.pid.toString(36)}-${(++nextId).toString(36)}`;
  private state: 'new' | 'initialising' | 'ready' = 'new';
  private initialising: Promise<void> | undefined;
  private session: Session | undefined;
  private headers: Headers | undefined;
  private readonly ops = new Map<string, Operation>();
  private initTimer: NodeJS.Timeout | undefined;
  private keepAlive: NodeJS.Timeout | undefined;
  private expiry: NodeJS.Timeout | undefined;
  private done = false;

  constructor(
    private readonly ws: WebSocket,
    readonly protocol: Protocol,
    private readonly upgradeHeaders: readonly [string, string][],
    private readonly host: ConnectionHost,
  ) {
    ws.on('message', (data: RawData) => this.onMessage(data));
    ws.on('close', () => this.cleanup());
    // Protocol errors of the socket (an oversized frame: ws closes it with 1009); 'close' follows.
    ws.on('error', (e) => host.log.debug('websocket-log', { websocket_id: this.id, event: { type: 'socket_error', detail: e.message } }));
    if (protocol === 'graphql-transport-ws') {
      this.initTimer = setTimeout(() => {
        if (this.state === 'new') this.close(4408, 'Connection initialisation timeout');
      }, host.config.websocketConnectionInitTimeout * 1000);
      this.initTimer.unref();
    }
  }

  get operations(): number {
    return this.ops.size;
  }

  // -------------------------------------------------------------------------------------------
  // Sending

  /** Sends a message, unless the client is not reading: then the connection is dropped. */
  private send(text: string): void {
    if (this.done || this.ws.readyState !== WebSocket.OPEN) return;
    if (this.ws.bufferedAmount > this.host.config.websocketMaxSendBuffer) {
      this.host.log.warn('websocket-log', {
        websocket_id: this.id,
        event: { type: 'slow_client', detail: `more than ${this.host.config.websocketMaxSendBuffer} bytes waiting to be sent (--websocket-max-send-buffer): the connection is dropped` },
      });
      this.ws.terminate();
      this.cleanup();
      return;
    }
    this.ws.send(text);
  }

  private sendData(id: string, payload: string): void {
    this.send(`{"type":"${this.protocol === 'graphql-ws' ? 'data' : 'next'}","id":${JSON.stringify(id)},"payload":${payload}}`);
  }

  private sendError(id: string, errors: GqlError[]): void {
    const payload = this.protocol === 'graphql-ws' ? { errors } : errors;
    this.send(JSON.stringify({ type: 'error', id, payload }));
  }

  private sendComplete(id: string): void {
    this.send(`{"type":"complete","id":${JSON.stringify(id)}}`);
  }

  /** An error of a request before it ran: `error` (and, in graphql-ws, `complete`). */
  private refuse(id: string, error: GqlError): void {
    this.sendError(id, [error]);
    if (this.protocol === 'graphql-ws') this.sendComplete(id);
  }

  /** A message that cannot be understood (Note [GraphQL over WebSocket]). */
  private badMessage(detail: string): void {
    const message = `parsing ClientMessage failed: ${detail}`;
    this.host.log.info('websocket-log', { websocket_id: this.id, event: { type: 'connection_error', detail: message } });
    if (this.protocol === 'graphql-ws') this.send(JSON.stringify({ type: 'connection_error', payload: message }));
    else this.close(4400, `Parsing client message failed: ${detail}`);
  }

  close(code: number, why: string): void {
    if (this.done) return;
    this.host.log.info('websocket-log', { websocket_id: this.id, event: { type: 'close_sent', code, detail: why } });
    try {
      this.ws.close(code, reason(why));
    } catch {
      this.ws.terminate();
    }
    this.cleanup();
  }

  // -------------------------------------------------------------------------------------------
  // Receiving

  private onMessage(data: RawData): void {
    if (this.done) return;
    const text = Array.isArray(data) ? Buffer.concat(data).toString('utf8') : Buffer.isBuffer(data) ? data.toString('utf8') : Buffer.from(data).toString('utf8');
    const m = parseMessage(text, this.host.config);
    if (typeof m === 'string') return this.badMessage(m);
    switch (m.type) {
      case 'connection_init':
        return this.init(m.payload);
      case 'start':
        return this.start(m.id, m.payload);
      case 'stop':
        return this.stop(m.id);
      case 'ping':
        return this.send(m.payload === undefined || m.payload === null ? '{"type":"pong"}' : JSON.stringify({ type: 'pong', payload: m.payload }));
      case 'pong':
        return;
      case 'connection_terminate':
        return this.close(1000, 'GQL_CONNECTION_TERMINATE received');
    }
  }

  private init(payload: Record<string, unknown> | undefined): void {
    if (this.state !== 'new' && this.protocol === 'graphql-transport-ws') return this.close(4429, 'Too many initialisation requests');
    if (this.state === 'initialising') return;
    this.state = 'initialising';
    if (this.initTimer) clearTimeout(this.initTimer);
    this.initialising = this.authenticate(payload);
  }

  private async authenticate(payload: Record<string, unknown> | undefined): Promise<void> {
    let session: Session;
    let headers: Headers;
    try {
      headers = initHeaders(payload, this.upgradeHeaders);
      session = await this.host.authenticate(headers, null);
    } catch (e) {
      if (this.done) return;
      const message = e instanceof SvcError ? e.message : 'internal error: authentication failed; see the server log';
      if (!(e instanceof SvcError)) this.host.log.error('websocket-log', { websocket_id: this.id, event: { type: 'init_failed', error: errorDetail(e) } });
      else this.host.log.info('websocket-log', { websocket_id: this.id, event: { type: 'connection_error', detail: message } });
      if (this.protocol === 'graphql-ws') {
        this.send(JSON.stringify({ type: 'connection_error', payload: message }));
        this.close(4400, `Connection initialization failed: ${message}`);
      } else this.close(4403, 'Forbidden');
      return;
    }
    if (this.done) return;
    this.session = session;
    this.headers = headers;
    this.expireAt(session.expiresAt);
    const first = this.state !== 'ready';
    this.state = 'ready';
    this.send('{"type":"connection_ack"}');
    if (first) {
      // Hasura's keep-alive starts with the ack: `ka` (graphql-ws) or a ping (graphql-transport-ws).
      const ka = this.protocol === 'graphql-ws' ? '{"type":"ka"}' : '{"type":"ping","payload":{"message":"keepalive"}}';
      this.send(ka);
      this.keepAlive = setInterval(() => this.send(ka), this.host.config.websocketKeepalive * 1000);
      this.keepAlive.unref();
    }
  }

  /** The session's credentials expire (a JWT's exp): the connection ends then, as Hasura ends
   * it, with the error a refused init has. */
  private expireAt(at: number | undefined): void {
    if (this.expiry) clearTimeout(this.expiry);
    this.expiry = undefined;
    if (at === undefined) return;
    const wait = at - Date.now();
    if (wait > 2 ** 31 - 1) {
      this.expiry = setTimeout(() => this.expireAt(at), 2 ** 31 - 1);
      this.expiry.unref();
      return;
    }
    this.expiry = setTimeout(() => {
      const message = 'Could not verify JWT: JWTExpired';
      this.host.log.info('websocket-log', { websocket_id: this.id, event: { type: 'jwt_expired' } });
      if (this.protocol === 'graphql-ws') {
        this.send(JSON.stringify({ type: 'connection_error', payload: message }));
        this.close(4400, message);
      } else this.close(4403, 'Forbidden');
    }, Math.max(0, wait));
    this.expiry.unref();
  }

  private start(id: string, payload: unknown): void {
    if (this.ops.has(id)) {
      if (this.protocol === 'graphql-transport-ws') return this.close(4409, `Subscriber for ${id} already exists`);
      return this.refuse(id, gqlError('start-failed', `an operation already exists with this id: ${id}`));
    }
    if (this.state !== 'ready' && (this.protocol === 'graphql-transport-ws' || this.state === 'new')) {
      if (this.protocol === 'graphql-transport-ws') return this.close(4401, 'Unauthorized');
      return this.refuse(id, gqlError('start-failed', 'start received before the connection is initialised'));
    }
    const op: Operation = { cancelled: false };
    this.ops.set(id, op);
    void this.run(id, op, payload).catch((e) => {
      this.host.log.error('websocket-log', { websocket_id: this.id, event: { type: 'operation_failed', operation_id: id, error: errorDetail(e) } });
      if (op.cancelled || this.done) return;
      this.ops.delete(id);
      this.refuse(id, gqlError('unexpected', 'internal error: the request could not be completed; see the server log'));
    });
  }

  private async run(id: string, op: Operation, payload: unknown): Promise<void> {
    if (this.state !== 'ready') await this.initialising;
    if (op.cancelled || this.done) return;
    const session = this.session!;
    const headers = this.headers!;
    const engine = this.host.engine;
    // Each operation is admitted by the request gates (Note [Request gates] in plugins/graphql/contract.ts).
    const found = engine.admit(session, 1, this.host.clientAddress);
    const admitted = found instanceof Promise ? await found : found;
    if (op.cancelled || this.done) return;
    if ('error' in admitted) {
      this.ops.delete(id);
      return this.refuse(id, admitted.error);
    }
    const prepared = await engine.prepareRequest(payload, session, headers, admitted.limits);
    if (op.cancelled || this.done) return;
    if ('error' in prepared) {
      this.ops.delete(id);
      return this.refuse(id, prepared.error);
    }
    if (prepared.kind === 'subscription') {
      const handle = engine.live.subscribe(prepared, { req: payload, session, headers }, {
        next: (text) => this.sendData(id, text),
        fail: (error) => {
          if (this.ops.get(id) !== op) return;
          this.ops.delete(id);
          this.refuse(id, error);
        },
      });
      if ('error' in handle) {
        this.ops.delete(id);
        return this.refuse(id, handle.error);
      }
      op.live = handle;
      this.host.log.debug('websocket-log', { websocket_id: this.id, event: { type: 'operation', operation_id: id, detail: 'started' } });
      return;
    }
    const answer = await prepared.run();
    if (op.cancelled || this.done) return;
    this.ops.delete(id);
    if (answer.text.startsWith('{"errors"') && this.protocol === 'graphql-transport-ws') {
      this.sendError(id, (JSON.parse(answer.text) as { errors: GqlError[] }).errors);
      return;
    }
    this.sendData(id, answer.text);
    this.sendComplete(id);
  }

  private stop(id: string): void {
    const op = this.ops.get(id);
    // An unknown id (an operation that finished, or never was) is no error, in both protocols.
    if (!op) return;
    this.ops.delete(id);
    op.cancelled = true;
    op.live?.stop();
    this.host.log.debug('websocket-log', { websocket_id: this.id, event: { type: 'operation', operation_id: id, detail: 'stopped' } });
  }

  /** Shutdown: every subscription stops, the client is told to come back (1012). */
  shutdown(): void {
    this.close(1012, 'shutting server down');
  }

  private cleanup(): void {
    if (this.done) return;
    this.done = true;
    if (this.initTimer) clearTimeout(this.initTimer);
    if (this.keepAlive) clearInterval(this.keepAlive);
    if (this.expiry) clearTimeout(this.expiry);
    for (const op of this.ops.values()) {
      op.cancelled = true;
      op.live?.stop();
    }
    this.ops.clear();
    this.host.closed(this);
  }
}
