import type { CopyDto, CopyState, PlacementRuleDto, PlacementRuleRequest } from '@tributary/shared';

/** What the Copies panel's form holds: text as typed, sites as ticked. */
export interface RuleForm {
  copies: string;
  /** Ticked sites; none: any site. */
  sites: string[];
  condition: string;
  /** `datetime-local` value (the reader's time zone), or empty for none. */
  expires: string;
}

export const EMPTY_RULE_FORM: RuleForm = { copies: '2', sites: [], condition: '', expires: '' };

/** The request for a rule on `path` from the form; the site checks everything else. */
export function ruleRequest(path: string, form: RuleForm): PlacementRuleRequest {
  const condition = form.condition.trim();
  const expires = form.expires ? new Date(form.expires) : null;
  return {
    path,
    copies: Number(form.copies),
    ...(form.sites.length > 0 ? { sites: form.sites } : {}),
    ...(condition ? { condition } : {}),
    ...(expires && !Number.isNaN(expires.getTime()) ? { expiresAt: expires.toISOString() } : {}),
  };
}

/** `2 copies at any site`, `1 copy among lsu, tulane`; a subscription: `a copy at tulane (subscribed)`. */
export function describeRule(
  rule: Pick<PlacementRuleDto, 'copies' | 'sites'> & { subscription?: boolean },
): string {
  if (rule.subscription) return `a copy at ${rule.sites?.join(', ') ?? 'any site'} (subscribed)`;
  const copies = `${rule.copies} ${rule.copies === 1 ? 'copy' : 'copies'}`;
  return rule.sites ? `${copies} among ${rule.sites.join(', ')}` : `${copies} at any site`;
}

export function isExpired(rule: Pick<PlacementRuleDto, 'expiresAt'>, now = Date.now()): boolean {
  return rule.expiresAt !== null && Date.parse(rule.expiresAt) <= now;
}

const STATE_LABELS: Record<CopyState, string> = {
  pending: 'waiting to be copied',
  copying: 'being copied',
  good: 'good',
  stale: 'stale (older bytes)',
  suspect: 'suspect (check failed)',
  failed: 'failed',
};

/** Why a copy is there: a rule wants it, it is cached (read there), or it was written there. */
export function copyKind(copy: Pick<CopyDto, 'cached' | 'pinned' | 'wanted'>): string {
  if (copy.cached) return copy.pinned ? 'cached, pinned' : 'cached';
  return copy.wanted ? 'wanted by a rule' : 'kept';
}

/** A copy's state in words; a `good` copy of older bytes is not served, and says so. */
export function copyStateLabel(copy: Pick<CopyDto, 'state' | 'current'>): string {
  if (copy.state === 'good' && !copy.current) return 'good, but of older bytes';
  return STATE_LABELS[copy.state];
}
