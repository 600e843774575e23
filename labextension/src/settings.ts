/**
 * The sidebar's user settings (`schema/sidebar.json`, plugin `air-magics:sidebar`).
 *
 * The schema is the source of the defaults; `DEFAULT_SETTINGS` repeats them only for a JupyterLab
 * without a settings registry (a test checks the two agree).
 */
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { ReadonlyPartialJSONObject } from '@lumino/coreutils';

export type SectionName = 'volumes' | 'training' | 'cache' | 'jobs' | 'checkpoints';

export const SECTION_NAMES: readonly SectionName[] = ['volumes', 'training', 'cache', 'jobs', 'checkpoints'];

export interface IAirSettings {
  /** Seconds between two status polls while the sidebar is visible. */
  refreshInterval: number;
  /** Entries per page of a folder listing. */
  pageSize: number;
  /** The sections shown, in order. */
  sections: SectionName[];
}

export const DEFAULT_SETTINGS: IAirSettings = {
  refreshInterval: 2,
  pageSize: 200,
  sections: ['volumes', 'training', 'cache', 'jobs', 'checkpoints']
};

function clamp(value: unknown, lo: number, hi: number, fallback: number): number {
  return typeof value === 'number' && isFinite(value) ? Math.min(hi, Math.max(lo, value)) : fallback;
}

function parseSections(value: unknown): SectionName[] {
  if (!Array.isArray(value)) {
    return [...DEFAULT_SETTINGS.sections];
  }
  return value.filter(
    (s, i): s is SectionName => SECTION_NAMES.includes(s as SectionName) && value.indexOf(s) === i
  );
}

/**
 * Settings from a registry's composite, each field checked: the registry validates against the
 * schema, but a hand-edited overrides file is still data, and a bad value must not stop polling.
 */
export function parseSettings(composite: ReadonlyPartialJSONObject): IAirSettings {
  return {
    refreshInterval: clamp(composite.refreshInterval, 0.5, 3600, DEFAULT_SETTINGS.refreshInterval),
    pageSize: Math.round(clamp(composite.pageSize, 1, 1000, DEFAULT_SETTINGS.pageSize)),
    sections: parseSections(composite.sections)
  };
}

/**
 * Call `apply` with the current settings now and after every change; without a registry (or when
 * the schema cannot be loaded) once, with the defaults.
 */
export async function watchSettings(
  registry: ISettingRegistry | null,
  pluginId: string,
  apply: (settings: IAirSettings) => void
): Promise<void> {
  if (!registry) {
    apply(DEFAULT_SETTINGS);
    return;
  }
  try {
    const settings = await registry.load(pluginId);
    apply(parseSettings(settings.composite));
    settings.changed.connect(() => apply(parseSettings(settings.composite)));
  } catch (error) {
    console.warn(`air-magics: settings could not be loaded, using the defaults: ${error}`);
    apply(DEFAULT_SETTINGS);
  }
}
