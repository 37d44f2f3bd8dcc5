import path from 'node:path';
import AxeBuilder from '@axe-core/playwright';
import { expect, type Locator, type Page } from '@playwright/test';

/**
 * The sizes every main screen is checked at: a common laptop, a smaller one, a wide monitor, and a
 * phone.
 */
export const SIZES = {
  desktop: { width: 1366, height: 768 },
  phone: { width: 390, height: 844 },
  laptop: { width: 1280, height: 720 },
  wide: { width: 2560, height: 1440 },
} as const;
export type SizeName = keyof typeof SIZES;

/**
 * What does not fit: the page scrolling sideways, elements reaching past the right edge outside a
 * scrolling box, and text cut off without an ellipsis, or cut with one but with no way to read the
 * whole (a `title` on it or an ancestor). Returns one line per problem, empty when it all fits.
 */
export async function layoutProblems(page: Page, scrollers: readonly string[] = []): Promise<string[]> {
  return page.evaluate((allowed) => {
    const problems: string[] = [];
    const width = document.documentElement.clientWidth;
    if (document.documentElement.scrollWidth > width + 1) {
      problems.push(`the page scrolls sideways: ${document.documentElement.scrollWidth} px > ${width} px`);
    }
    const describe = (el: Element): string => {
      const text = (el.textContent ?? '').trim().replace(/\s+/g, ' ').slice(0, 40);
      const cls =
        typeof el.className === 'string' && el.className ? `.${el.className.split(' ').join('.')}` : '';
      return `<${el.tagName.toLowerCase()}${cls}> "${text}"`;
    };
    const scrolls = (el: Element): boolean => {
      for (let a = el.parentElement; a && a !== document.body; a = a.parentElement) {
        const o = getComputedStyle(a).overflowX;
        if (o === 'auto' || o === 'scroll') return true;
      }
      return false;
    };
    const titled = (el: Element): boolean => {
      for (let a: Element | null = el; a && a !== document.body; a = a.parentElement) {
        if (a.getAttribute('title')) return true;
      }
      return false;
    };
    for (const el of Array.from(document.querySelectorAll('main *, header *'))) {
      const style = getComputedStyle(el);
      if (style.display === 'none' || style.visibility === 'hidden') continue;
      if (el.closest('.visually-hidden')) continue;
      const rect = el.getBoundingClientRect();
      if (rect.width === 0 || rect.height === 0) continue;
      if (rect.right > width + 1 && !scrolls(el)) {
        problems.push(`${describe(el)} reaches ${Math.round(rect.right)} px, past the ${width} px edge`);
      }
      // A box that scrolls sideways hides part of what it holds: only the allowed ones may.
      const scrolling = style.overflowX === 'auto' || style.overflowX === 'scroll';
      if (scrolling && el.scrollWidth > el.clientWidth + 1 && !allowed.some((s) => el.matches(s))) {
        problems.push(`${describe(el)} scrolls sideways (${el.scrollWidth} px in ${el.clientWidth} px)`);
      }
      const hidden = style.overflowX === 'hidden' || style.overflowX === 'clip';
      if (hidden && el.scrollWidth > el.clientWidth + 1 && el.children.length === 0) {
        if (style.textOverflow !== 'ellipsis')
          problems.push(`${describe(el)} is cut off without an ellipsis`);
        else if (!titled(el)) problems.push(`${describe(el)} is cut off with no title to read it whole`);
      }
    }
    return [...new Set(problems)].slice(0, 20);
  }, scrollers);
}

/** Fails with every serious or critical accessibility violation axe-core finds on the page. */
export async function expectAccessible(page: Page, screen: string): Promise<void> {
  const result = await new AxeBuilder({ page })
    .withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'])
    .analyze();
  const bad = result.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map(
      (v) =>
        `${v.id} (${v.impact}): ${v.help}\n    ${v.nodes
          .slice(0, 5)
          .map((n) => n.target.join(' '))
          .join('\n    ')}`,
    );
  expect(bad, `accessibility violations on ${screen}`).toEqual([]);
}

/** Fails when the screen does not fit (see layoutProblems). */
export async function expectFits(page: Page, screen: string, size: SizeName): Promise<void> {
  // On a phone a wide table may scroll inside its own box; on a laptop nothing may.
  const scrollers = size === 'phone' ? ['.table-wrap', '.table-scroll'] : [];
  expect(await layoutProblems(page, scrollers), `layout of ${screen}`).toEqual([]);
}

/**
 * Compares the screen with its reference image in e2e/screenshots/ (`<screen>-<variant>.png`, the
 * variant a size and maybe `-dark`), what changes from run to run (times, ids) masked.
 */
export async function expectLooksRight(
  page: Page,
  screen: string,
  variant: string,
  mask: Locator[] = [],
): Promise<void> {
  await expect(page).toHaveScreenshot(`${screen}-${variant}.png`, {
    fullPage: true,
    mask: [page.locator('time'), page.locator('[data-volatile]'), ...mask],
    maxDiffPixelRatio: 0.003,
    animations: 'disabled',
    // Only while comparing: times take a fixed room, rows timed by the scrub are left out. Injected
    // as a style element, so the page's context must bypass the site's CSP (style-src 'self').
    stylePath: path.join(__dirname, 'screenshot.css'),
  });
}
