/**
 * The sidebar's Training section: the latest run's training chart (`GET training`), drawn by
 * `chart.ts`, refreshed with the other status sections (at most every 0.5 s, only while the
 * sidebar is shown). An unchanged answer touches no node, so a hovered point keeps its tooltip.
 */
import { TranslationBundle } from '@jupyterlab/translation';

import { ITrainingDoc } from './api';
import { drawChart } from './chart';
import { KeyedNodes } from './dom';
import { el } from './format';
import { ISectionContent } from './sections';

export class TrainingContent implements ISectionContent<ITrainingDoc> {
  constructor(private readonly _trans: TranslationBundle) {}

  update(body: HTMLElement, doc: ITrainingDoc): void {
    const key = doc.spec ? 'chart' : 'empty';
    this._nodes.update(body, [{ key, sig: JSON.stringify(doc.spec), item: doc }]);
  }

  private _render(doc: ITrainingDoc): HTMLElement {
    if (!doc.spec) {
      return el(
        'div',
        'air-muted air-training-empty',
        this._trans.__('No training loop yet: iterate an air_magics DataLoader; its chart shows here.')
      );
    }
    const block = drawChart(doc.spec);
    block.title = doc.text;
    return block;
  }

  private _nodes = new KeyedNodes<ITrainingDoc>(doc => this._render(doc));
}
