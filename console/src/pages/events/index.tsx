/** Events: event triggers with their events, cron triggers, one-off scheduled events; a tab each. */
import { Link, segments } from '../../router';
import { CronTriggers } from './Cron';
import { EventTriggers } from './EventTriggers';
import { OneOffEvents } from './OneOff';

const TABS: [string, string, string][] = [
  ['', 'Event triggers', 'events-tab-triggers'],
  ['cron', 'Cron triggers', 'events-tab-cron'],
  ['one-off', 'One-off scheduled events', 'events-tab-one-off'],
];

export function EventsPage({ path }: { path: string }) {
  const [tab = '', name] = segments(path, '/events');
  return (
    <div className="page">
      <h2>Events</h2>
      <nav className="tabs" aria-label="Events">
        {TABS.map(([t, label, testid]) => (
          <Link key={t} to={t ? `/events/${t}` : '/events'} className={t === tab ? 'active' : ''} testid={testid}>
            {label}
          </Link>
        ))}
      </nav>
      {tab === '' && <EventTriggers />}
      {tab === 'cron' && <CronTriggers name={name} />}
      {tab === 'one-off' && <OneOffEvents />}
    </div>
  );
}
