import { useId, useState, type FormEvent } from 'react';
import { useMutation, useQuery } from '@tanstack/react-query';
import type { PlacementSiteDto, SubscriptionDto } from '@tributary/shared';
import { api } from '../api';
import { ErrorNote } from '../app/ErrorNote';

/** A site as a person reads it: its name, with its id when they differ. */
function siteLabel(site: PlacementSiteDto): string {
  return site.name === site.id ? site.id : `${site.name} (${site.id})`;
}

/**
 * Subscribes a site to the collection (docs/caching.md, "Subscriptions"): everything below it, now
 * and later, is copied to that site as soon as it is written. The site answering is the default, as
 * for `trib subscribe`; an owner may subscribe another site. A subscription is a placement rule, so it
 * then appears among the rules above (with Unsubscribe).
 */
export function SubscribeForm({ path, onSubscribed }: { path: string; onSubscribed: () => void }) {
  const id = useId();
  const [site, setSite] = useState('');
  const [condition, setCondition] = useState('');
  const [done, setDone] = useState<SubscriptionDto | null>(null);
  const sites = useQuery({
    queryKey: ['placement', 'sites'],
    queryFn: ({ signal }) => api.placementSites(signal),
    staleTime: 60_000,
  });
  const choices: PlacementSiteDto[] = sites.data ?? [];
  const local = choices.find((s) => s.local);
  const subscribe = useMutation({
    mutationFn: () =>
      api.subscribe({
        path,
        ...(site ? { site } : {}),
        ...(condition.trim() ? { condition: condition.trim() } : {}),
      }),
    onSuccess: (created) => {
      setDone(created);
      setCondition('');
      onSubscribed();
    },
  });

  function submit(e: FormEvent) {
    e.preventDefault();
    if (!subscribe.isPending) {
      setDone(null);
      subscribe.mutate();
    }
  }

  return (
    <form onSubmit={submit} className="stack-form" aria-labelledby={`${id}-legend`}>
      <fieldset>
        <legend id={`${id}-legend`}>Subscribe a site</legend>
        <p className="muted">
          A subscribed site gets a copy of everything in this collection, now and whenever something is
          written here, so that its users read it locally.
        </p>
        <label htmlFor={`${id}-s`}>Subscriber</label>
        <select id={`${id}-s`} value={site} onChange={(e) => setSite(e.target.value)}>
          <option value="">{local ? `This site, ${siteLabel(local)}` : 'This site'}</option>
          {choices
            .filter((s) => !s.local)
            .map((s) => (
              <option key={s.id} value={s.id}>
                {siteLabel(s)}
              </option>
            ))}
        </select>
        <ErrorNote error={sites.error} />
        <label htmlFor={`${id}-w`}>Follow only objects where (optional)</label>
        <input
          id={`${id}-w`}
          placeholder="instrument = lidar"
          value={condition}
          onChange={(e) => setCondition(e.target.value)}
        />
        <button type="submit" disabled={subscribe.isPending}>
          {subscribe.isPending ? 'Subscribing…' : 'Subscribe'}
        </button>
      </fieldset>
      <ErrorNote error={subscribe.error} />
      {done && (
        <p role="status">
          {done.site} follows {done.path}
          {done.condition ? ` (objects where ${done.condition})` : ''}: its copies are being made.
        </p>
      )}
    </form>
  );
}
