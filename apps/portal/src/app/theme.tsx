import { createContext, useContext, useEffect, useId, useState, type ReactNode } from 'react';

/** What a person chose: follow the system's setting, or always light or dark. */
export type ThemeChoice = 'system' | 'light' | 'dark';
export type Theme = 'light' | 'dark';

const KEY = 'tributary.theme';
const DARK = '(prefers-color-scheme: dark)';

/** The choice kept in this browser (`system` when none or unreadable). */
export function storedTheme(): ThemeChoice {
  try {
    const v = localStorage.getItem(KEY);
    return v === 'light' || v === 'dark' ? v : 'system';
  } catch {
    return 'system';
  }
}

/**
 * Puts the choice on `<html data-theme>` (styles.css: a forced theme wins over the media query;
 * none follows `prefers-color-scheme`). Called before the first render too, so nothing flashes.
 */
export function applyTheme(choice: ThemeChoice): void {
  const root = document.documentElement;
  if (choice === 'system') delete root.dataset.theme;
  else root.dataset.theme = choice;
}

/** The theme in force for a choice and the system's setting. */
export function resolveTheme(choice: ThemeChoice, systemDark: boolean): Theme {
  return choice === 'system' ? (systemDark ? 'dark' : 'light') : choice;
}

interface ThemeState {
  choice: ThemeChoice;
  theme: Theme;
  choose: (choice: ThemeChoice) => void;
}

const ThemeContext = createContext<ThemeState>({ choice: 'system', theme: 'light', choose: () => {} });

/** The theme in force and the switch's state, for the switch and for charts (which draw in its colours). */
export function useTheme(): ThemeState {
  return useContext(ThemeContext);
}

export function ThemeProvider({ children }: { children: ReactNode }) {
  const [choice, setChoice] = useState<ThemeChoice>(storedTheme);
  const [systemDark, setSystemDark] = useState(() => window.matchMedia?.(DARK).matches ?? false);
  useEffect(() => {
    const media = window.matchMedia?.(DARK);
    if (!media) return;
    const onChange = () => setSystemDark(media.matches);
    media.addEventListener('change', onChange);
    return () => media.removeEventListener('change', onChange);
  }, []);
  function choose(next: ThemeChoice) {
    setChoice(next);
    applyTheme(next);
    try {
      if (next === 'system') localStorage.removeItem(KEY);
      else localStorage.setItem(KEY, next);
    } catch {
      // Private browsing without storage: the choice lasts for this page only.
    }
  }
  return (
    <ThemeContext.Provider value={{ choice, theme: resolveTheme(choice, systemDark), choose }}>
      {children}
    </ThemeContext.Provider>
  );
}

/** The header's switch: system, light or dark. */
export function ThemeSwitch() {
  const { choice, choose } = useTheme();
  const id = useId();
  return (
    <span className="theme-switch">
      <label htmlFor={id}>Theme</label>
      <select
        id={id}
        aria-label="Theme"
        value={choice}
        onChange={(e) => choose(e.target.value as ThemeChoice)}
      >
        <option value="system">System</option>
        <option value="light">Light</option>
        <option value="dark">Dark</option>
      </select>
    </span>
  );
}

/** A colour variable of the theme in force (charts draw with these; SVG attributes take no `var()`). */
export function themeColor(name: string, fallback: string): string {
  if (typeof document === 'undefined') return fallback;
  const v = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
  return v || fallback;
}
