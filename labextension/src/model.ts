/**
 * The status model: polls the `training`, `cache`, `jobs` and `checkpoints` endpoints and tells the views
 * when a section changed.
 *
 * One `Poll` fetches the shown sections together; it backs off while requests fail and stands by
 * while the sidebar (or the browser tab) is hidden. A section's signal fires only when its data or
 * error differs from the last answer (compared as JSON), so an unchanged refresh costs the views
 * nothing.
 */
import { IDisposable } from '@lumino/disposable';
import { Poll } from '@lumino/polling';
import { ISignal, Signal } from '@lumino/signaling';

import { ICacheDoc, ICheckpointFolder, IJob, ITrainingDoc, requestAPI } from './api';

export type StatusSection = 'training' | 'cache' | 'jobs' | 'checkpoints';

export const STATUS_SECTIONS: readonly StatusSection[] = ['training', 'cache', 'jobs', 'checkpoints'];

/** What each section shows. */
export interface IStatusData {
  training: ITrainingDoc;
  cache: ICacheDoc;
  jobs: IJob[];
  checkpoints: ICheckpointFolder[];
}

export interface ISectionState<T> {
  /** The last answer (kept through errors), null before the first one. */
  readonly data: T | null;
  /** The last request's error message, null when it succeeded. */
  readonly error: string | null;
}

type States = { [K in StatusSection]: ISectionState<IStatusData[K]> };
type Signals = { [K in StatusSection]: Signal<StatusModel, ISectionState<IStatusData[K]>> };

/** Longest wait between two failed polls. */
const MAX_BACKOFF_MS = 60_000;

/** Each endpoint's answer reduced to what its section shows (`jobs` also answers the server's
 * clock, which differs every time and would make every poll look like a change). */
const FETCH: { [K in StatusSection]: () => Promise<IStatusData[K]> } = {
  training: async () => requestAPI<ITrainingDoc>('training'),
  cache: async () => {
    const doc = await requestAPI<ICacheDoc>('cache');
    return { cache: doc.cache, loader: doc.loader };
  },
  jobs: async () => (await requestAPI<{ jobs: IJob[] }>('jobs')).jobs,
  checkpoints: async () =>
    (await requestAPI<{ checkpoints: ICheckpointFolder[] }>('checkpoints')).checkpoints
};

export class StatusModel implements IDisposable {
  constructor(intervalSeconds: number) {
    this._signals = {
      training: new Signal(this),
      cache: new Signal(this),
      jobs: new Signal(this),
      checkpoints: new Signal(this)
    };
    this._poll = new Poll({
      name: 'air-magics:status',
      factory: () => this._fetch(),
      frequency: StatusModel._frequency(intervalSeconds),
      // paused: the sidebar is hidden; 'when-hidden': the browser tab is
      standby: () => this._paused || 'when-hidden'
    });
  }

  /** Emitted when the training chart (or its error) changed. */
  get trainingChanged(): ISignal<StatusModel, ISectionState<ITrainingDoc>> {
    return this._signals.training;
  }

  /** Emitted when the cache statistics (or their error) changed. */
  get cacheChanged(): ISignal<StatusModel, ISectionState<ICacheDoc>> {
    return this._signals.cache;
  }

  /** Emitted when the list of jobs (or its error) changed. */
  get jobsChanged(): ISignal<StatusModel, ISectionState<IJob[]>> {
    return this._signals.jobs;
  }

  /** Emitted when the checkpoint folders (or their error) changed. */
  get checkpointsChanged(): ISignal<StatusModel, ISectionState<ICheckpointFolder[]>> {
    return this._signals.checkpoints;
  }

  /** Emitted after every poll in which all shown sections answered, changed or not. */
  get polled(): ISignal<StatusModel, Date> {
    return this._polled;
  }

  /** The last known state of `section`. */
  state<K extends StatusSection>(section: K): States[K] {
    return this._states[section];
  }

  /** Seconds between polls (failed polls back off from there). */
  set interval(seconds: number) {
    const frequency = StatusModel._frequency(seconds);
    if (frequency.interval === this._poll.frequency.interval) {
      return;
    }
    this._poll.frequency = frequency;
    if (!this._paused) {
      void this._poll.refresh(); // an interval shortened from minutes applies now, not after the old wait
    }
  }

  /** The sections polled; a section added is fetched at once. */
  set sections(names: readonly StatusSection[]) {
    const added = names.some(n => !this._sections.includes(n));
    this._sections = STATUS_SECTIONS.filter(n => names.includes(n));
    if (added && !this._paused) {
      void this._poll.refresh();
    }
  }

  /** While paused (the sidebar is hidden) nothing is fetched; resuming fetches at once. */
  get paused(): boolean {
    return this._paused;
  }

  set paused(paused: boolean) {
    if (paused === this._paused) {
      return;
    }
    this._paused = paused;
    if (!paused) {
      void this._poll.refresh();
    }
  }

  /** Poll now; resolves once the answers are applied (at once while paused). */
  async refresh(): Promise<void> {
    await this._poll.refresh();
    await this._poll.tick.catch(() => undefined);
  }

  /** Clear the server's cache; the answer updates the cache section and is returned. */
  async clearCache(): Promise<ICacheDoc> {
    const doc = await requestAPI<ICacheDoc>('cache', {}, { method: 'DELETE' });
    this._applied = ++this._seq; // a poll started before the clear must not bring back the old numbers
    this._set('cache', { data: { cache: doc.cache, loader: doc.loader }, error: null });
    return doc;
  }

  get isDisposed(): boolean {
    return this._poll.isDisposed;
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this._poll.dispose();
    Signal.clearData(this);
  }

  private static _frequency(seconds: number) {
    const interval = Math.max(500, Math.round(seconds * 1000));
    return { interval, backoff: true, max: Math.max(interval, MAX_BACKOFF_MS) };
  }

  /** One poll: fetch the shown sections together, apply what answered, fail (so the poll backs
   * off) when any did not. */
  private async _fetch(): Promise<void> {
    const seq = ++this._seq;
    const names = this._sections;
    const results = await Promise.allSettled(names.map(name => FETCH[name]()));
    if (seq < this._applied) {
      return; // a newer answer is already shown
    }
    this._applied = seq;
    let failure: unknown = null;
    results.forEach((result, i) => {
      const name = names[i];
      if (result.status === 'fulfilled') {
        this._set(name, { data: result.value, error: null } as States[typeof name]);
      } else {
        failure = result.reason;
        const message = result.reason instanceof Error ? result.reason.message : String(result.reason);
        this._set(name, { data: this._states[name].data, error: message } as States[typeof name]);
      }
    });
    if (failure !== null) {
      throw failure;
    }
    this._polled.emit(new Date());
  }

  private _set<K extends StatusSection>(name: K, state: States[K]): void {
    const json = JSON.stringify(state);
    if (json === this._json[name]) {
      return;
    }
    this._json[name] = json;
    this._states[name] = state;
    this._signals[name].emit(state);
  }

  private _poll: Poll;
  private _paused = true;
  private _sections: readonly StatusSection[] = STATUS_SECTIONS;
  private _seq = 0;
  private _applied = 0;
  private _signals: Signals;
  private _polled = new Signal<StatusModel, Date>(this);
  private _states: States = {
    training: { data: null, error: null },
    cache: { data: null, error: null },
    jobs: { data: null, error: null },
    checkpoints: { data: null, error: null }
  };
  private _json: { [K in StatusSection]?: string } = {};
}
