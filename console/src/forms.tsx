/**
 * The form pieces the pages share: labelled fields (every input has a real <label>, so the pages
 * work from the keyboard and read well to a screen reader), a headers editor, a role picker, the
 * SQL/DDL preview, and the list-and-detail layout of the metadata areas.
 */
import { useState } from 'react';
import type { HeaderConf } from './api';
import { Link } from './router';

export function TextField(props: {
  label: React.ReactNode;
  value: string;
  onChange: (v: string) => void;
  testid?: string;
  placeholder?: string;
  type?: string;
  size?: number;
  hint?: React.ReactNode;
  list?: string;
  disabled?: boolean;
}) {
  return (
    <label>
      {props.label}{' '}
      <input
        type={props.type ?? 'text'}
        value={props.value}
        size={props.size}
        placeholder={props.placeholder}
        list={props.list}
        disabled={props.disabled}
        onChange={(e) => props.onChange(e.target.value)}
        data-testid={props.testid}
      />
      {props.hint && <span className="hint">{props.hint}</span>}
    </label>
  );
}

export function CodeField(props: { label: React.ReactNode; value: string; onChange: (v: string) => void; testid?: string; rows?: number; placeholder?: string }) {
  return (
    <label>
      {props.label}
      <textarea className="code" rows={props.rows ?? 6} spellCheck={false} value={props.value} placeholder={props.placeholder} onChange={(e) => props.onChange(e.target.value)} data-testid={props.testid} />
    </label>
  );
}

export function CheckField(props: { label: React.ReactNode; checked: boolean; onChange: (v: boolean) => void; testid?: string; disabled?: boolean }) {
  return (
    <label className="check">
      <input type="checkbox" checked={props.checked} disabled={props.disabled} onChange={(e) => props.onChange(e.target.checked)} data-testid={props.testid} /> {props.label}
    </label>
  );
}

export function SelectField<T extends string>(props: { label: React.ReactNode; value: T; options: readonly (T | [T, string])[]; onChange: (v: T) => void; testid?: string }) {
  return (
    <label>
      {props.label}{' '}
      <select value={props.value} onChange={(e) => props.onChange(e.target.value as T)} data-testid={props.testid}>
        {props.options.map((o) => {
          const [v, text] = Array.isArray(o) ? o : [o, o];
          return (
            <option key={v} value={v}>
              {text}
            </option>
          );
        })}
      </select>
    </label>
  );
}

/** JSON typed by the user: empty is `fallback`; a syntax error names the field. */
export function parseJson(text: string, what: string, fallback: unknown = undefined): any {
  if (text.trim() === '') return fallback;
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new Error(`${what}: invalid JSON (${(e as Error).message})`);
  }
}

export const pretty = (x: unknown): string => (x === undefined ? '' : JSON.stringify(x, null, 2));

/** A non-negative integer typed by the user, or undefined when empty. */
export function parseCount(text: string, what: string): number | undefined {
  if (text.trim() === '') return undefined;
  const n = Number(text);
  if (!Number.isInteger(n) || n < 0) throw new Error(`${what}: expected a whole number, got "${text}"`);
  return n;
}

/** Headers as the metadata writes them: a value, or the name of an environment variable. */
export function HeadersEditor({ value, onChange, testid }: { value: HeaderConf[]; onChange: (v: HeaderConf[]) => void; testid: string }) {
  const set = (i: number, h: HeaderConf) => onChange(value.map((x, j) => (j === i ? h : x)));
  return (
    <fieldset data-testid={testid}>
      <legend>Headers</legend>
      {value.length === 0 && <p className="muted">None.</p>}
      {value.map((h, i) => {
        const fromEnv = 'value_from_env' in h;
        const v = fromEnv ? h.value_from_env : h.value;
        return (
          <div className="row" key={i}>
            <TextField label="Name" value={h.name} onChange={(name) => set(i, fromEnv ? { name, value_from_env: v } : { name, value: v })} testid={`${testid}-name-${i}`} />
            <SelectField
              label="from"
              value={fromEnv ? 'env' : 'value'}
              options={[
                ['value', 'value'],
                ['env', 'environment variable'],
              ]}
              onChange={(k) => set(i, k === 'env' ? { name: h.name, value_from_env: v } : { name: h.name, value: v })}
              testid={`${testid}-kind-${i}`}
            />
            <TextField label={fromEnv ? 'Variable' : 'Value'} value={v} onChange={(x) => set(i, fromEnv ? { name: h.name, value_from_env: x } : { name: h.name, value: x })} testid={`${testid}-value-${i}`} />
            <button type="button" className="link" onClick={() => onChange(value.filter((_, j) => j !== i))} aria-label={`Remove header ${h.name}`}>
              Remove
            </button>
          </div>
        );
      })}
      <button type="button" className="small" onClick={() => onChange([...value, { name: '', value: '' }])} data-testid={`${testid}-add`}>
        + header
      </button>
    </fieldset>
  );
}

/** Headers with an empty name dropped (a row added and left blank). */
export const filledHeaders = (hs: HeaderConf[]): HeaderConf[] => hs.filter((h) => h.name.trim() !== '');

/** Roles to pick: a checkbox for each known role (and each picked one), and a field for another. */
export function RolePicker({ known, value, onChange, testid, legend = 'Roles' }: { known: string[]; value: string[]; onChange: (v: string[]) => void; testid: string; legend?: string }) {
  const [other, setOther] = useState('');
  const all = [...new Set([...known, ...value])].sort();
  const add = () => {
    const r = other.trim();
    if (r && !value.includes(r)) onChange([...value, r]);
    setOther('');
  };
  return (
    <fieldset data-testid={testid}>
      <legend>{legend}</legend>
      {all.map((r) => (
        <CheckField key={r} label={r} checked={value.includes(r)} onChange={(on) => onChange(on ? [...value, r] : value.filter((x) => x !== r))} testid={`${testid}-${r}`} />
      ))}
      <span className="row">
        <TextField label="Another role" value={other} onChange={setOther} testid={`${testid}-other`} />
        <button type="button" className="small" onClick={add} data-testid={`${testid}-add`}>
          Add
        </button>
      </span>
    </fieldset>
  );
}

/** The SQL (or other text) that a button is about to send, shown before it is sent. */
export function Preview({ title, text, testid }: { title: string; text: string; testid?: string }) {
  return (
    <div className="preview">
      <div className="muted">{title}</div>
      <pre data-testid={testid}>{text}</pre>
    </div>
  );
}

/** A destructive button that asks first (the browser's own dialog: keyboard and screen-reader
 * friendly, and nothing to build). */
export function DangerButton({ label, question, onConfirm, testid, disabled, small }: { label: string; question: string; onConfirm: () => void; testid?: string; disabled?: boolean; small?: boolean }) {
  return (
    <button type="button" className={small ? 'danger small' : 'danger'} disabled={disabled} onClick={() => confirm(question) && onConfirm()} data-testid={testid}>
      {label}
    </button>
  );
}

/**
 * An area's layout: the list of its objects on the left (links, so each has an address), and the
 * page of the one open, or of a new one, on the right.
 */
export function AreaLayout(props: { title: string; base: string; items: string[]; selected?: string; newLabel: string; testid: string; extra?: React.ReactNode; children: React.ReactNode }) {
  return (
    <div className="data">
      <aside className="sidebar" aria-label={props.title}>
        <h2 className="side-title">{props.title}</h2>
        {props.extra}
        <Link to={props.base} className={props.selected === undefined ? 'new active' : 'new'} testid={`${props.testid}-new`}>
          {props.newLabel}
        </Link>
        <ul className="tables" data-testid={`${props.testid}-list`}>
          {props.items.map((name) => (
            <li key={name} className={name === props.selected ? 'active' : ''}>
              <Link to={`${props.base}/${encodeURIComponent(name)}`} testid={`${props.testid}-item-${name}`}>
                {name}
              </Link>
            </li>
          ))}
        </ul>
        {props.items.length === 0 && <p className="muted">None yet.</p>}
      </aside>
      <section className="content">
        <div className="page">{props.children}</div>
      </section>
    </div>
  );
}
