/**
 * air_magics JupyterLab extension: a left-sidebar panel with volumes, cache, jobs and checkpoints.
 *
 * Data comes from the air_magics server extension (`<base_url>/air/api/`), which reads the same
 * status documents as the notebook widgets. Commands: `air-magics:refresh`, `air-magics:open`.
 * Settings (`schema/sidebar.json`) apply live; without a settings registry the defaults hold, and
 * without a translator the English text.
 */
import {
  ILayoutRestorer,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { Clipboard, ICommandPalette } from '@jupyterlab/apputils';
import { INotebookTracker, NotebookActions } from '@jupyterlab/notebook';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { ITranslator, nullTranslator } from '@jupyterlab/translation';
import { LabIcon } from '@jupyterlab/ui-components';

import { AirSidebar } from './panel';
import { watchSettings } from './settings';
import { SnippetKind } from './tree';

const ICON_SVG = `<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 24 24" fill="none">
  <g class="jp-icon3" stroke="#616161" stroke-width="2">
    <ellipse cx="12" cy="5.5" rx="7.5" ry="2.5"/>
    <path d="M4.5 5.5v13c0 1.4 3.4 2.5 7.5 2.5s7.5-1.1 7.5-2.5v-13"/>
    <path d="M4.5 12c0 1.4 3.4 2.5 7.5 2.5s7.5-1.1 7.5-2.5"/>
  </g>
</svg>`;

export const airIcon = new LabIcon({ name: 'air-magics:volumes', svgstr: ICON_SVG });

const CommandIDs = {
  refresh: 'air-magics:refresh',
  open: 'air-magics:open'
} as const;

/** The notebook text for a snippet button. */
export function snippet(kind: SnippetKind, path: string): string {
  if (kind === 'ls') {
    return `%air_volume ls ${path}`;
  }
  const parts = path.split('/');
  const volume = parts[4] ?? 'data';
  return `%%air_copy --to /local_disk0/${volume}\n${path}`;
}

const PLUGIN_ID = 'air-magics:sidebar';

const plugin: JupyterFrontEndPlugin<void> = {
  id: PLUGIN_ID,
  description: 'Volumes, cache, jobs and checkpoints of air_magics in the left sidebar.',
  autoStart: true,
  optional: [ICommandPalette, INotebookTracker, ILayoutRestorer, ISettingRegistry, ITranslator],
  activate: (
    app: JupyterFrontEnd,
    palette: ICommandPalette | null,
    notebooks: INotebookTracker | null,
    restorer: ILayoutRestorer | null,
    registry: ISettingRegistry | null,
    translator: ITranslator | null
  ) => {
    const trans = (translator ?? nullTranslator).load('air_magics');
    // the actions run on clicks, after `panel` below exists
    const copyPath = (path: string): void => {
      Clipboard.copyToSystem(path);
      panel.say(trans.__('Copied %1', path));
    };

    const insertSnippet = (kind: SnippetKind, path: string): void => {
      const text = snippet(kind, path);
      const current = notebooks?.currentWidget;
      if (!current) {
        Clipboard.copyToSystem(text);
        panel.say(trans.__('No notebook is open: the snippet was copied to the clipboard.'));
        return;
      }
      const nb = current.content;
      const active = nb.activeCell;
      if (!active || active.model.type !== 'code' || active.model.sharedModel.getSource().trim() !== '') {
        NotebookActions.insertBelow(nb);
      }
      const cell = nb.activeCell;
      if (!cell) {
        panel.say(trans.__('Cannot insert into this notebook (is it read-only?).'), true);
        return;
      }
      if (cell.model.type !== 'code') {
        NotebookActions.changeCellType(nb, 'code');
      }
      nb.activeCell?.model.sharedModel.setSource(text);
      app.shell.activateById(current.id);
      panel.say(trans.__('Inserted into %1', current.context.path));
    };

    const panel = new AirSidebar({ copyPath, insertSnippet }, airIcon, trans);
    app.shell.add(panel, 'left', { rank: 650 });
    if (restorer) {
      restorer.add(panel, 'air-magics-sidebar');
    }
    void watchSettings(registry, PLUGIN_ID, settings => panel.applySettings(settings));

    app.commands.addCommand(CommandIDs.refresh, {
      label: trans.__('Refresh Air Sidebar'),
      caption: trans.__('Reload volumes, cache, jobs and checkpoints'),
      execute: () => panel.refresh()
    });
    app.commands.addCommand(CommandIDs.open, {
      label: trans.__('Show Air Sidebar'),
      execute: () => app.shell.activateById(panel.id)
    });
    if (palette) {
      const category = trans.__('Air');
      palette.addItem({ command: CommandIDs.refresh, category });
      palette.addItem({ command: CommandIDs.open, category });
    }
  }
};

export default plugin;
