/**
 * A GraphQL request's answer, and a request prepared for a transport other than POST (Note
 * [Requests over other transports] in ./engine.ts): the types the engine and the transports and
 * live queries share, apart from the engine so that they import no cycle.
 */
import type { BuildResult, RunContext } from '../plugin.js';
import type { RootFields } from './prepare.js';
import type { OperationKind } from './schema.js';

export interface Answer {
  text: string;
  /** 200, or 500 for an unexpected failure of a single (not batched) request. */
  status: number;
  /** Headers the fields added to the HTTP response (RunContext.responseHeaders). */
  headers?: [string, string][];
}

/*
 * Note [Requests over other transports]
 * The WebSocket protocols (core/graphql/ws) send requests one by one and need to know what a
 * request is before running it: a query or mutation is answered once, a subscription is handed
 * to the live queries (./live.ts), and errors found before running (parse, validation, variables,
 * planning) are reported differently from errors of running (the protocols' `error` and `data`
 * messages). `prepareRequest` does the first half of the POST path (the same plan cache, whose
 * entries for such transports are kept apart only because they accept subscriptions) and leaves
 * the running to the caller.
 */

/** A request prepared for a transport other than POST (Note [Requests over other transports]). */
export interface PreparedRequest {
  readonly kind: OperationKind;
  readonly fields: RootFields;
  /** What the plans run with: the session, the coerced variables, the headers. */
  readonly ctx: RunContext;
  /** The build it was planned on: a subscription is planned again once it is not the current one. */
  readonly build: BuildResult;
  /** Runs a query or mutation: the response's text, as POST answers it (errors included). */
  run(): Promise<Answer>;
}
