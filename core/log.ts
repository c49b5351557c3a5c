/** JSON-lines logger: one `{type, timestamp, level, detail}` object per line on stdout. */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
const RANK: Record<LogLevel, number> = { debug: 0, info: 1, warn: 2, error: 3 };

export interface Logger {
  /** Whether a line of `level` is written: a caller on the path of every request builds its
   * detail only then. Absent: every level is. */
  enabled?(level: LogLevel): boolean;
  log(level: LogLevel, type: string, detail: unknown): void;
  debug(type: string, detail: unknown): void;
  info(type: string, detail: unknown): void;
  warn(type: string, detail: unknown): void;
  error(type: string, detail: unknown): void;
}

export function createLogger(min: LogLevel = 'info', write: (line: string) => void = (l) => process.stdout.write(l + '\n')): Logger {
  const log = (level: LogLevel, type: string, detail: unknown) => {
    if (RANK[level] < RANK[min]) return;
    write(JSON.stringify({ type, timestamp: new Date().toISOString(), level, detail }));
  };
  return {
    enabled: (level) => RANK[level] >= RANK[min],
    log,
    debug: (t, d) => log('debug', t, d),
    info: (t, d) => log('info', t, d),
    warn: (t, d) => log('warn', t, d),
    error: (t, d) => log('error', t, d),
  };
}

/** Error details safe to log (message and stack, no secrets from the error object itself). */
export function errorDetail(e: unknown): Record<string, unknown> {
  if (e instanceof Error) return { message: e.message, name: e.name, stack: e.stack };
  return { message: String(e) };
}
