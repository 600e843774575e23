/**
 * air_magics JupyterLab extension: a left-sidebar panel with volumes, cache, jobs and checkpoints.
 *
 * Data comes from the air_magics server extension (`<base_url>/air/api/`), which reads the same
 * status documents as the notebook widgets. Commands: `air-magics:refresh`, `air-magics:open`.
 */
import {
  ILayoutRestorer,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { Clipboard, ICommandPalette } from '@jupyterlab/apputils';
import { INotebookTracker, NotebookActions } from '@jupyterlab/notebook';
import { LabIcon } from '@jupyterlab/ui-components';

import { AirSidebar } from './panel';
import { SnippetKind } from './tree';

const ICON_SVG = `<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 24 24" fill="none">
  <g class="jp-icon3" stroke="#616161" stroke-width="2">
    <ellipse cx="12" cy="5.5" rx="7.5" ry="2.5"/>
    <path d="M4.5 5.5v13c0 1.4 3.4 2.5 7.5 2.5s7.5-1.1 7.5-2.5v-13"/>
    <path d="M4.5 12c0 1.4 3.4 2.5 7.5 2.5s7.5-1.1 7.5-2.5"/>
  </g>
</svg>`;

export const airIcon = new LabIcon({ name: 'air-magics:volumes', svgstr: ICON_SVG });

namespace CommandIDs {
  export const refresh = 'air-magics:refresh';
  export const open = 'air-magics:open';
}

/** The notebook text for a snippet button. */
export function snippet(kind: SnippetKind, path: string): string {
  if (kind === 'ls') {
    return `%air_volume ls ${path}`;
  }
  const parts = path.split('/');
  const volume = parts[4] ?? 'data';
  return `%%air_copy --to /local_disk0/${volume}\n${path}`;
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'air-magics:sidebar',
  description: 'Volumes, cache, jobs and checkpoints of air_magics in the left sidebar.',
  autoStart: true,
  optional: [ICommandPalette, INotebookTracker, ILayoutRestorer],
  activate: (
    app: JupyterFrontEnd,
    palette: ICommandPalette | null,
    notebooks: INotebookTracker | null,
    restorer: ILayoutRestorer | null
  ) => {
    let panel: AirSidebar;

    const copyPath = (path: string): void => {
      Clipboard.copyToSystem(path);
      panel.say(`Copied ${path}`);
    };

    const insertSnippet = (kind: SnippetKind, path: string): void => {
      const text = snippet(kind, path);
      const current = notebooks?.currentWidget;
      if (!current) {
        Clipboard.copyToSystem(text);
        panel.say('No notebook is open: the snippet was copied to the clipboard.');
        return;
      }
      const nb = current.content;
      const active = nb.activeCell;
      if (!active || active.model.type !== 'code' || active.model.sharedModel.getSource().trim() !== '') {
        NotebookActions.insertBelow(nb);
      }
      const cell = nb.activeCell;
      if (!cell) {
        panel.say('Cannot insert into this notebook (is it read-only?).', true);
        return;
      }
      if (cell.model.type !== 'code') {
        NotebookActions.changeCellType(nb, 'code');
      }
      nb.activeCell?.model.sharedModel.setSource(text);
      app.shell.activateById(current.id);
      panel.say(`Inserted into ${current.context.path}`);
    };

    panel = new AirSidebar({ copyPath, insertSnippet }, airIcon);
    app.shell.add(panel, 'left', { rank: 650 });
    if (restorer) {
      restorer.add(panel, 'air-magics-sidebar');
    }

    app.commands.addCommand(CommandIDs.refresh, {
      label: 'Refresh Air Sidebar',
      caption: 'Reload volumes, cache, jobs and checkpoints',
      execute: () => panel.refresh()
    });
    app.commands.addCommand(CommandIDs.open, {
      label: 'Show Air Sidebar',
      execute: () => app.shell.activateById(panel.id)
    });
    if (palette) {
      palette.addItem({ command: CommandIDs.refresh, category: 'Air' });
      palette.addItem({ command: CommandIDs.open, category: 'Air' });
    }
  }
};

export default plugin;
