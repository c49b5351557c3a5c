/** The retry settings of cron triggers and scheduled events (RetryConfST), as text fields; an
 * empty field is the server's default. */
import { parseCount, TextField } from '../../forms';

export const RETRY_KEYS = ['num_retries', 'retry_interval_seconds', 'timeout_seconds', 'tolerance_seconds'] as const;
export type RetryText = Record<(typeof RETRY_KEYS)[number], string>;
const LABELS: RetryText = { num_retries: 'Retries', retry_interval_seconds: 'Retry interval (s)', timeout_seconds: 'Timeout (s)', tolerance_seconds: 'Tolerance (s)' };
const DEFAULTS: RetryText = { num_retries: '0', retry_interval_seconds: '10', timeout_seconds: '60', tolerance_seconds: '21600' };

export const retryText = (r?: Partial<Record<(typeof RETRY_KEYS)[number], number>>): RetryText =>
  Object.fromEntries(RETRY_KEYS.map((k) => [k, r?.[k] === undefined || String(r[k]) === DEFAULTS[k] ? '' : String(r[k])])) as RetryText;

/** The retry_conf to send, or undefined when every field is empty. */
export function retryConf(t: RetryText): Record<string, number> | undefined {
  const out: Record<string, number> = {};
  for (const k of RETRY_KEYS) {
    const n = parseCount(t[k], LABELS[k]);
    if (n !== undefined) out[k] = n;
  }
  return Object.keys(out).length ? out : undefined;
}

export function RetryFields({ value, onChange, testid }: { value: RetryText; onChange: (v: RetryText) => void; testid: string }) {
  return (
    <fieldset>
      <legend>Retries</legend>
      <div className="row">
        {RETRY_KEYS.map((k) => (
          <TextField key={k} label={LABELS[k]} value={value[k]} placeholder={DEFAULTS[k]} size={6} onChange={(x) => onChange({ ...value, [k]: x })} testid={`${testid}-${k}`} />
        ))}
      </div>
    </fieldset>
  );
}
