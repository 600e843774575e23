/**
 * The server extension's REST API (`<base_url>/air/api/...`) and the documents it answers.
 *
 * Every call goes through `ServerConnection.makeRequest`, which adds the token or login cookie and
 * the `X-XSRFToken` header for state-changing calls. Errors carry the server's own message.
 */
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

export interface IVolumeRef {
  name: string;
  path: string;
  kind: string;
}

export interface IVolumesDoc {
  root: string;
  kind: string;
  count: number;
  catalogs: {
    name: string;
    schemas: { name: string; volumes: IVolumeRef[] }[];
  }[];
}

export interface IEntry {
  name: string;
  path: string;
  is_dir: boolean;
  size: number | null;
  mtime: number | null;
}

export interface IFolderPage {
  path: string;
  offset: number;
  limit: number;
  total: number;
  next_offset: number | null;
  entries: IEntry[];
}

/*
 * The documents below are the Python events' documents (`air_magics.events.<Event>.to_dict()`),
 * field for field: tests/test_event_schema.py compares each interface named after an event with
 * that event's `keys()` and fails when either side changes alone.
 */

/** `air_magics.events.CacheEvent` (the shared cache statistics), as the `cache` status document. */
export interface ICacheStats {
  root?: string;
  entries?: number;
  bytes?: number;
  limit?: number | null;
  reserve?: number;
  free_disk?: number;
  hits?: number;
  misses?: number;
  bytes_hit?: number;
  bytes_fetched?: number;
  evictions?: number;
  overflows?: number;
  revalidated?: number;
  revalidation_seconds?: number;
  hit_rate?: number;
  /** status document: when it was written, and when its snapshot was taken */
  updated?: number;
  snapshot_time?: number;
}

/** `air_magics.events.LoaderEvent` (a DataLoader's timing), as the `loader-<pid>` status document. */
export interface ILoaderStats {
  pid?: number;
  steps?: number;
  data_wait_s?: number;
  compute_s?: number;
  wait_share?: number;
  /** the share as every view shows it, rounded once in Python (0.1): what the verdict's kind is decided on */
  wait_percent?: number;
  epoch?: number;
  files?: number;
  num_workers?: number;
  /** this loader's rank of `world` (torch.distributed, else RANK/WORLD_SIZE) */
  rank?: number;
  world?: number;
  /** the %%air_torchrun run it belongs to, or null */
  launch?: string | null;
  /** the input pipeline's verdict in one line, from the 10th step on ("" before) */
  verdict?: string;
  /**
   * the verdict's kind, computed in Python (`air_magics.datasets.verdict.kind_of`): warming-up, compute-bound,
   * moderately input-bound, input-bound; the sidebar shows it, never a threshold rule of its own
   */
  verdict_kind?: string;
  /** wall seconds per input stage (listing, storage_read, cache_write, handover, transform, collate, wait, compute) */
  stages?: Record<string, number>;
  /** items handed out so far */
  items?: number;
  /** bytes the input stages read from storage so far */
  read_bytes?: number;
  /** running totals over time (`air_magics.charts.history`), added by the status layer */
  history?: { fields: string[]; rows: number[][] };
  done?: boolean;
  updated?: number;
}

/** One band of a chart panel (the verdict's kinds on the data-wait panel), in the panel's unit. */
export interface IChartBand {
  from: number;
  to: number;
  label: string;
}

/** One line of a panel: a rank's (or a stage's) `[step, value]` points. */
export interface IChartSeries {
  name: string;
  points: [number, number][];
}

/** One panel of the training chart (`air_magics.charts.spec`). */
export interface IChartPanel {
  id: string;
  title: string;
  unit: string;
  /** the series are stacked (seconds per step by stage); each point keeps its own value */
  stacked: boolean;
  /** the axis top (100 for a percentage), null: from the data */
  ymax: number | null;
  bands: IChartBand[];
  series: IChartSeries[];
}

/** The training chart as plain data, drawn alike by the cell (SVG from Python) and the sidebar (`chart.ts`). */
export interface IChartSpec {
  /** the step axis every panel shares */
  x: { label: string; unit: string; from: number; to: number };
  /** the first rank's verdict sentence ("" before the 10th step) */
  verdict: string;
  verdict_kind: string;
  ranks: number;
  steps: number;
  panels: IChartPanel[];
}

/** `GET training`: the latest run's chart (null before a loader has a history) and its text line. */
export interface ITrainingDoc {
  spec: IChartSpec | null;
  text: string;
}

export interface ICacheDoc {
  cache: ICacheStats | null;
  loader: ILoaderStats | null;
  /** each rank's current loader when the latest loader belongs to a launch of several ranks (by rank) */
  loaders?: ILoaderStats[];
  removed?: number;
  /** entries not removed because a reader was handed their path in the last pin window */
  kept?: number;
  summary?: string;
}

/** What the jobs endpoint adds to each job's event document (`air_magics.server.queries.JOB_EXTRA`). */
export interface IJobExtra {
  /** the status document's name, e.g. `job-copy-<job>` */
  name: string;
  updated: number | null;
  /** 0..1, null when unknown */
  progress: number | null;
  /** running, but its process is gone */
  stale: boolean;
}

/** `air_magics.events.CopyEvent`: one named copy (`%%air_copy`, `air_magics.copy(job=...)`). */
export interface ICopyDoc {
  kind: 'copy';
  job: string;
  state: string;
  pid: number;
  finished: number | null;
  files_total: number;
  copied: number;
  skipped: number;
  failed: number;
  bytes_total: number;
  bytes_done: number;
  elapsed: number;
  files_done: number;
  files_per_second: number;
  eta: number | null;
  dest: string;
  sources: string[];
  started: number;
}

/** `air_magics.events.ExportEvent`: a table export (`%air_table --export`). */
export interface IExportDoc {
  kind: 'export';
  job: string;
  state: string;
  pid: number;
  finished: number | null;
  dest: string;
  rows: number;
  files: number;
  tasks: number | null;
  tasks_done: number | null;
  bytes_read: number | null;
  bytes: number | null;
  error: string | null;
  started: number;
}

/** `air_magics.snapshots.PackReport`: what a finished pack run did. */
export interface IPackReport {
  source: string;
  dest: string;
  files: number;
  bytes: number;
  shards: number;
  shards_written: number;
  shards_reused: number;
  shards_kept: number;
  shards_removed: number;
  files_written: number;
  bytes_written: number;
  generation: number;
  unchanged: boolean;
  dry_run: boolean;
  seconds: number;
}

/** `air_magics.events.PackEvent`: a pack run (`%air_volume pack`, `air_magics.shards.pack`). */
export interface IPackDoc {
  kind: 'pack';
  /** the destination folder */
  job: string;
  state: string;
  pid: number;
  finished: number | null;
  files_done: number;
  files_total: number;
  bytes_done: number;
  bytes_total: number;
  shards_done: number;
  shards_total: number;
  seconds: number;
  src: string;
  dest: string;
  engine: string;
  started: number;
  report: IPackReport | null;
  error: string | null;
}

export type ICopyJob = ICopyDoc & IJobExtra;
export type IExportJob = IExportDoc & IJobExtra;
export type IPackJob = IPackDoc & IJobExtra;
/** One entry of `GET jobs`; `kind` tells which. */
export type IJob = ICopyJob | IExportJob | IPackJob;

export interface ISave {
  step: number;
  state: 'staging' | 'uploading' | 'committed' | 'failed' | string;
  started?: number;
  finished?: number | null;
  bytes?: number;
  seconds?: number;
  mb_per_s?: number;
  blocked_s?: number;
  staging_s?: number;
  waited_s?: number;
  /** a save of several ranks: the data bytes each rank wrote, in rank order (null for one rank) */
  rank_bytes?: number[] | null;
  error?: string | null;
}

export interface ICheckpointFolder {
  name: string;
  directory: string;
  keep?: number | null;
  latest: number | null;
  steps: number[];
  pending: string[];
  saves: ISave[];
  updated?: number;
  error: string | null;
  /** The saves' time line (`air_magics.charts.saves.save_timeline`), null when none has a start time. */
  timeline?: ITimelineSpec | null;
}

/** One phase of a save, in seconds from the time line's start (`x.t0`, wall clock). */
export interface ITimelineSegment {
  kind: 'queued' | 'blocked' | 'staging' | 'upload' | 'commit';
  lane: 'loop' | 'save';
  from: number;
  to: number;
}

export interface ITimelineSave {
  step: number;
  state: string;
  mb_per_s: number | null;
  overlaps: boolean;
  queued: boolean;
  segments: ITimelineSegment[];
}

/** Named values as bars (`air_magics.charts.svg.bars_svg`), `refs` drawn as dashed lines across. */
export interface IBarsPanel {
  id: string;
  title: string;
  unit: string;
  x_label?: string;
  bars: { label: string; value: number; title?: string }[];
  refs?: { label: string; value: number }[];
}

export interface ITimelineSpec {
  x: { t0: number; from: number; to: number; unit: string };
  rate: IChartPanel | null;
  /** Each save's MB/s against the volume's measured rate (its last probe), null without a rate. */
  rates?: IBarsPanel | null;
  saves: ITimelineSave[];
}

/** A failed API call: `status` is the HTTP status (0 when the server could not be reached). */
export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number
  ) {
    super(message);
  }
}

/** Call `air/api/<endpoint>` (with an optional query) and return the parsed JSON answer. */
export async function requestAPI<T>(
  endpoint: string,
  query: Record<string, string | number> = {},
  init: RequestInit = {}
): Promise<T> {
  const settings = ServerConnection.makeSettings();
  const params = Object.entries(query)
    .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(String(v))}`)
    .join('&');
  const url =
    URLExt.join(settings.baseUrl, 'air/api', endpoint) + (params ? `?${params}` : '');
  let response: Response;
  try {
    response = await ServerConnection.makeRequest(url, init, settings);
  } catch (error) {
    throw new ApiError(`cannot reach the Jupyter server: ${error}`, 0);
  }
  const text = await response.text();
  let data: unknown = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = null;
    }
  }
  if (!response.ok) {
    const sent = (data as { message?: unknown } | null)?.message;
    const message =
      (typeof sent === 'string' && sent) ||
      response.statusText ||
      'request failed';
    const hint =
      response.status === 404 && !data
        ? ' (is the air_magics server extension enabled? `jupyter server extension list`)'
        : '';
    throw new ApiError(`${response.status}: ${message}${hint}`, response.status);
  }
  return data as T;
}
