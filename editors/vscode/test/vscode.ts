/**
 * A hand-written stand-in for the `vscode` module, enough for the extension and for loading
 * vscode-languageclient: the API's value types (Position, Range, Selection, Uri, EventEmitter,
 * RelativePattern…) behave like VS Code's, and so does `languages.match`; the editor's UI
 * (messages, quick picks, editors, the clipboard, the settings, the language status items)
 * records what it is asked and answers what a test queued; its events (settings, workspace
 * folders, file watchers, trust, the active editor) fire when a test says so. `reset()`
 * between tests.
 */

/* eslint-disable @typescript-eslint/no-extraneous-class -- VS Code's empty base classes */

export const version = "1.91.0";

// -- value types ------------------------------------------------------------------------------

export class Position {
  constructor(
    readonly line: number,
    readonly character: number,
  ) {}
  translate(lineDelta = 0, characterDelta = 0): Position {
    return new Position(this.line + lineDelta, this.character + characterDelta);
  }
  with(line = this.line, character = this.character): Position {
    return new Position(line, character);
  }
  isEqual(other: Position): boolean {
    return this.line === other.line && this.character === other.character;
  }
  isBefore(other: Position): boolean {
    return this.line < other.line || (this.line === other.line && this.character < other.character);
  }
  compareTo(other: Position): number {
    return this.isBefore(other) ? -1 : this.isEqual(other) ? 0 : 1;
  }
}

export class Range {
  readonly start: Position;
  readonly end: Position;
  constructor(start: Position | number, end: Position | number, endLine?: number, endCharacter?: number) {
    const a = typeof start === "number" ? new Position(start, end as number) : start;
    const b = typeof start === "number" ? new Position(endLine ?? 0, endCharacter ?? 0) : (end as Position);
    [this.start, this.end] = b.isBefore(a) ? [b, a] : [a, b];
  }
  get isEmpty(): boolean {
    return this.start.isEqual(this.end);
  }
}

export class Selection extends Range {
  readonly anchor: Position;
  readonly active: Position;
  constructor(anchor: Position, active: Position) {
    super(anchor, active);
    this.anchor = anchor;
    this.active = active;
  }
  get isReversed(): boolean {
    return this.active.isBefore(this.anchor);
  }
}

export class Uri {
  private constructor(
    readonly scheme: string,
    readonly path: string,
    readonly query = "",
    readonly fragment = "",
  ) {}
  static file(path: string): Uri {
    return new Uri("file", path);
  }
  static parse(text: string): Uri {
    const match = /^([a-z][a-z0-9+.-]*):(?:\/\/[^/]*)?([^?#]*)(?:\?([^#]*))?(?:#(.*))?$/i.exec(text);
    if (match === null) throw new Error(`not a URI: ${text}`);
    return new Uri(match[1] ?? "file", decodeURIComponent(match[2] ?? ""), match[3] ?? "", match[4] ?? "");
  }
  static joinPath(base: Uri, ...parts: string[]): Uri {
    return new Uri(base.scheme, [base.path.replace(/\/$/, ""), ...parts].join("/"));
  }
  static from(components: { scheme: string; path?: string; query?: string; fragment?: string }): Uri {
    return new Uri(
      components.scheme,
      components.path ?? "",
      components.query ?? "",
      components.fragment ?? "",
    );
  }
  get fsPath(): string {
    return this.path;
  }
  get authority(): string {
    return "";
  }
  with(change: { scheme?: string; path?: string; query?: string; fragment?: string }): Uri {
    return new Uri(
      change.scheme ?? this.scheme,
      change.path ?? this.path,
      change.query ?? this.query,
      change.fragment ?? this.fragment,
    );
  }
  toString(): string {
    const slashes = this.scheme === "file" ? "//" : "";
    const path = encodeURI(this.path).replace(/[?#]/g, encodeURIComponent);
    return `${this.scheme}:${slashes}${path}${this.query ? `?${this.query}` : ""}${this.fragment ? `#${this.fragment}` : ""}`;
  }
  toJSON(): unknown {
    return { scheme: this.scheme, path: this.path };
  }
}

/** A glob relative to a folder. */
export class Location {
  constructor(
    readonly uri: Uri,
    readonly range: Range,
  ) {}
}

export class RelativePattern {
  readonly baseUri: Uri;
  constructor(
    base: Uri | string | { uri: Uri },
    readonly pattern: string,
  ) {
    this.baseUri = typeof base === "string" ? Uri.file(base) : base instanceof Uri ? base : base.uri;
  }
}

export class Disposable {
  constructor(private readonly callOnDispose: () => unknown = () => undefined) {}
  static from(...items: { dispose(): unknown }[]): Disposable {
    return new Disposable(() => items.forEach((item) => item.dispose()));
  }
  dispose(): void {
    this.callOnDispose();
  }
}

export type Event<T> = (
  listener: (e: T) => unknown,
  thisArg?: unknown,
  disposables?: Disposable[],
) => Disposable;

export class EventEmitter<T> {
  private listeners = new Set<(e: T) => unknown>();
  readonly event: Event<T> = (listener, thisArg, disposables) => {
    const bound = thisArg === undefined ? listener : listener.bind(thisArg);
    this.listeners.add(bound);
    const disposable = new Disposable(() => this.listeners.delete(bound));
    disposables?.push(disposable);
    return disposable;
  };
  fire(event: T): void {
    for (const listener of [...this.listeners]) listener(event);
  }
  dispose(): void {
    this.listeners.clear();
  }
}

export class CancellationError extends Error {}

export class CancellationTokenSource {
  private readonly emitter = new EventEmitter<undefined>();
  readonly token = {
    isCancellationRequested: false,
    onCancellationRequested: this.emitter.event,
  };
  cancel(): void {
    this.token.isCancellationRequested = true;
    this.emitter.fire(undefined);
  }
  dispose(): void {
    this.emitter.dispose();
  }
}

export class TextEdit {
  constructor(
    public range: Range,
    public newText: string,
  ) {}
  static replace(range: Range, newText: string): TextEdit {
    return new TextEdit(range, newText);
  }
  static insert(position: Position, newText: string): TextEdit {
    return new TextEdit(new Range(position, position), newText);
  }
}

/** The edits of a `workspace/applyEdit`, by document; `workspace.applyEdit` records it. */
export class WorkspaceEdit {
  readonly edits: { uri: Uri; edit: TextEdit }[] = [];
  replace(uri: Uri, range: Range, newText: string): void {
    this.edits.push({ uri, edit: new TextEdit(range, newText) });
  }
  insert(uri: Uri, position: Position, newText: string): void {
    this.replace(uri, new Range(position, position), newText);
  }
  delete(uri: Uri, range: Range): void {
    this.replace(uri, range, "");
  }
  set(uri: Uri, edits: readonly (TextEdit | [TextEdit, unknown])[]): void {
    for (const entry of edits) {
      const edit = Array.isArray(entry) ? entry[0] : entry;
      this.edits.push({ uri, edit });
    }
  }
  has(uri: Uri): boolean {
    return this.edits.some((entry) => entry.uri.toString() === uri.toString());
  }
  get size(): number {
    return this.edits.length;
  }
}

export class CodeActionKind {
  static readonly Empty = new CodeActionKind("");
  static readonly QuickFix = new CodeActionKind("quickfix");
  static readonly Refactor = new CodeActionKind("refactor");
  static readonly RefactorExtract = new CodeActionKind("refactor.extract");
  static readonly RefactorInline = new CodeActionKind("refactor.inline");
  static readonly RefactorRewrite = new CodeActionKind("refactor.rewrite");
  static readonly Source = new CodeActionKind("source");
  static readonly SourceOrganizeImports = new CodeActionKind("source.organizeImports");
  private constructor(readonly value: string) {}
  append(part: string): CodeActionKind {
    return new CodeActionKind(this.value ? `${this.value}.${part}` : part);
  }
}

export enum DiagnosticSeverity {
  Error = 0,
  Warning = 1,
  Information = 2,
  Hint = 3,
}

export enum DiagnosticTag {
  Unnecessary = 1,
  Deprecated = 2,
}

export class TabInputText {
  constructor(readonly uri: Uri) {}
}

export class ThemeColor {
  constructor(readonly id: string) {}
}

export class ThemeIcon {
  constructor(readonly id: string) {}
}

export class MarkdownString {
  constructor(public value = "") {}
}

// Base classes vscode-languageclient extends when it loads.
export class CompletionItem {
  constructor(public label: unknown) {}
}
export class CodeLens {
  constructor(public range: Range) {}
}
export class CodeAction {
  constructor(public title: string) {}
}
export class Diagnostic {
  constructor(
    public range: Range,
    public message: string,
  ) {}
}
export class DocumentLink {
  constructor(public range: Range) {}
}
export class InlayHint {
  constructor(public position: Position) {}
}
export class SymbolInformation {
  constructor(public name: string) {}
}
export class CallHierarchyItem {}
export class TypeHierarchyItem {}

export enum LanguageStatusSeverity {
  Information = 0,
  Warning = 1,
  Error = 2,
}

export enum ViewColumn {
  Active = -1,
  Beside = -2,
  One = 1,
  Two = 2,
}

export enum ConfigurationTarget {
  Global = 1,
  Workspace = 2,
  WorkspaceFolder = 3,
}

export enum QuickPickItemKind {
  Separator = -1,
  Default = 0,
}

export enum LogLevel {
  Off = 0,
  Trace = 1,
  Debug = 2,
  Info = 3,
  Warning = 4,
  Error = 5,
}

export enum ProgressLocation {
  SourceControl = 1,
  Window = 10,
  Notification = 15,
}

// -- documents and editors --------------------------------------------------------------------

export class TextDocument {
  isClosed = false;
  version = 1;
  constructor(
    readonly uri: Uri,
    readonly languageId: string,
    public text: string,
  ) {}
  get lineCount(): number {
    return this.text.split("\n").length;
  }
  get isUntitled(): boolean {
    return this.uri.scheme === "untitled";
  }
  lineAt(line: number): { text: string; lineNumber: number } {
    return { text: this.text.split("\n")[line] ?? "", lineNumber: line };
  }
  offsetAt(position: Position): number {
    const lines = this.text.split("\n");
    let offset = 0;
    for (let i = 0; i < position.line; i++) offset += (lines[i] ?? "").length + 1;
    return offset + position.character;
  }
  getText(range?: Range): string {
    if (range === undefined) return this.text;
    return this.text.slice(this.offsetAt(range.start), this.offsetAt(range.end));
  }
}

export class TextEditorEdit {
  readonly replacements: { range: Range; text: string }[] = [];
  replace(range: Range, text: string): void {
    this.replacements.push({ range, text });
  }
  insert(position: Position, text: string): void {
    this.replacements.push({ range: new Range(position, position), text });
  }
}

export class TextEditor {
  selections: Selection[];
  constructor(
    readonly document: TextDocument,
    selection: Selection = new Selection(new Position(0, 0), new Position(0, 0)),
  ) {
    this.selections = [selection];
  }
  get selection(): Selection {
    const first = this.selections[0];
    if (first === undefined) throw new Error("no selection");
    return first;
  }
  set selection(selection: Selection) {
    this.selections = [selection];
  }
  /** Applies the edits to the document's text, last first, like one undo step. */
  edit(callback: (builder: TextEditorEdit) => void): Promise<boolean> {
    const builder = new TextEditorEdit();
    callback(builder);
    const doc = this.document;
    const ordered = [...builder.replacements].sort(
      (a, b) => doc.offsetAt(b.range.start) - doc.offsetAt(a.range.start),
    );
    for (const { range, text } of ordered) {
      doc.text =
        doc.text.slice(0, doc.offsetAt(range.start)) + text + doc.text.slice(doc.offsetAt(range.end));
    }
    doc.version++;
    return Promise.resolve(true);
  }
}

/** A document of `language` with `text`, at `file:///notes/<name>` (or untitled). */
export function makeDocument(
  text: string,
  language = "markdown",
  uri = "file:///notes/prompt.md",
): TextDocument {
  return new TextDocument(Uri.parse(uri), language, text);
}

// -- the UI: recorded and scripted ------------------------------------------------------------

export interface Shown {
  level: "error" | "warning" | "information";
  message: string;
  actions: string[];
}

export class FakeOutputChannel {
  readonly lines: string[] = [];
  logLevel = LogLevel.Info;
  shown = 0;
  private readonly levelEmitter = new EventEmitter<LogLevel>();
  readonly onDidChangeLogLevel = this.levelEmitter.event;
  constructor(readonly name: string) {}
  append(text: string): void {
    this.lines.push(text);
  }
  appendLine(text: string): void {
    this.lines.push(text);
  }
  replace(text: string): void {
    this.lines.splice(0, this.lines.length, text);
  }
  clear(): void {
    this.lines.length = 0;
  }
  trace(text: string): void {
    this.lines.push(`[trace] ${text}`);
  }
  debug(text: string): void {
    this.lines.push(`[debug] ${text}`);
  }
  info(text: string): void {
    this.lines.push(`[info] ${text}`);
  }
  warn(text: string): void {
    this.lines.push(`[warning] ${text}`);
  }
  error(text: string | Error): void {
    this.lines.push(`[error] ${String(text)}`);
  }
  show(): void {
    this.shown++;
  }
  hide(): void {
    /* nothing to hide */
  }
  dispose(): void {
    /* nothing to free */
  }
}

export class FakeLanguageStatusItem {
  name: string | undefined;
  text = "";
  detail: string | undefined;
  busy = false;
  severity = LanguageStatusSeverity.Information;
  command: { title: string; command: string } | undefined;
  disposed = false;
  constructor(
    readonly id: string,
    public selector: unknown,
  ) {}
  dispose(): void {
    this.disposed = true;
  }
}

/** A file system watcher whose events a test fires (`state.watchers`). */
export class FakeWatcher {
  private readonly created = new EventEmitter<Uri>();
  private readonly changed = new EventEmitter<Uri>();
  private readonly deleted = new EventEmitter<Uri>();
  readonly onDidCreate = this.created.event;
  readonly onDidChange = this.changed.event;
  readonly onDidDelete = this.deleted.event;
  disposed = false;
  constructor(readonly pattern: unknown) {}
  create(uri: Uri): void {
    this.created.fire(uri);
  }
  delete(uri: Uri): void {
    this.deleted.fire(uri);
  }
  dispose(): void {
    this.disposed = true;
  }
}

export interface PickItem {
  label: string;
  description?: string;
  detail?: string;
  alwaysShow?: boolean;
}

export class FakeQuickPick<T extends PickItem> {
  items: readonly T[] = [];
  selectedItems: readonly T[] = [];
  activeItems: readonly T[] = [];
  title: string | undefined;
  placeholder: string | undefined;
  busy = false;
  value = "";
  matchOnDescription = false;
  matchOnDetail = false;
  visible = false;
  disposed = false;
  private readonly valueEmitter = new EventEmitter<string>();
  private readonly acceptEmitter = new EventEmitter<undefined>();
  private readonly hideEmitter = new EventEmitter<undefined>();
  readonly onDidChangeValue = this.valueEmitter.event;
  readonly onDidAccept = this.acceptEmitter.event;
  readonly onDidHide = this.hideEmitter.event;
  show(): void {
    this.visible = true;
  }
  hide(): void {
    this.visible = false;
    this.hideEmitter.fire(undefined);
  }
  dispose(): void {
    this.disposed = true;
  }
  /** The user types: the value changes. */
  type(value: string): void {
    this.value = value;
    this.valueEmitter.fire(value);
  }
  /** The user picks the item at `index` and presses Enter. */
  accept(index = 0): void {
    const item = this.items[index];
    this.selectedItems = item === undefined ? [] : [item];
    this.acceptEmitter.fire(undefined);
  }
}

interface State {
  shown: Shown[];
  /** Answers to the next messages, in order (an action's title, or undefined). */
  answers: (string | undefined)[];
  /** Answers to the next showQuickPick calls: the index of the chosen item, or undefined. */
  picks: (number | undefined)[];
  quickPicks: FakeQuickPick<PickItem>[];
  languageStatusItems: FakeLanguageStatusItem[];
  watchers: FakeWatcher[];
  /** `setContext` values. */
  context: Map<string, unknown>;
  trusted: boolean;
  trustEmitter: EventEmitter<undefined>;
  foldersEmitter: EventEmitter<unknown>;
  activeEditorEmitter: EventEmitter<TextEditor | undefined>;
  statusMessages: string[];
  outputs: FakeOutputChannel[];
  opened: { document: TextDocument; options: unknown }[];
  activeTextEditor: TextEditor | undefined;
  clipboard: string;
  commands: Map<string, (...args: unknown[]) => unknown>;
  executed: { command: string; args: unknown[] }[];
  configuration: Record<string, unknown>;
  configurationEmitter: EventEmitter<{ affectsConfiguration(section: string): boolean }>;
  workspaceFolders: { uri: Uri; name: string; index: number }[] | undefined;
  applied: WorkspaceEdit[];
  /** Text document content providers, by scheme. */
  providers: Map<string, { provideTextDocumentContent(uri: Uri): string }>;
}

function fresh(): State {
  return {
    shown: [],
    answers: [],
    picks: [],
    quickPicks: [],
    languageStatusItems: [],
    watchers: [],
    context: new Map(),
    trusted: true,
    trustEmitter: new EventEmitter(),
    foldersEmitter: new EventEmitter(),
    activeEditorEmitter: new EventEmitter(),
    statusMessages: [],
    outputs: [],
    opened: [],
    activeTextEditor: undefined,
    clipboard: "",
    commands: new Map(),
    executed: [],
    configuration: {},
    configurationEmitter: new EventEmitter(),
    workspaceFolders: undefined,
    applied: [],
    providers: new Map(),
  };
}

/** What the fake editor recorded, and what it answers next. */
export const state: State = fresh();

export function reset(): void {
  Object.assign(state, fresh());
}

function message(level: Shown["level"]) {
  return (text: string, ...rest: unknown[]): Promise<string | undefined> => {
    const actions = rest.filter((item): item is string => typeof item === "string");
    state.shown.push({ level, message: text, actions });
    const answer = state.answers.shift();
    return Promise.resolve(answer !== undefined && actions.includes(answer) ? answer : undefined);
  };
}

export const window = {
  get activeTextEditor(): TextEditor | undefined {
    return state.activeTextEditor;
  },
  get visibleTextEditors(): TextEditor[] {
    return state.activeTextEditor ? [state.activeTextEditor] : [];
  },
  /** One tab group with the active editor's document, the only visible one. */
  tabGroups: {
    get all() {
      const editor = state.activeTextEditor;
      return [{ tabs: editor ? [{ input: new TabInputText(editor.document.uri) }] : [] }];
    },
    onDidChangeTabs: new EventEmitter<unknown>().event,
    onDidChangeTabGroups: new EventEmitter<unknown>().event,
  },
  onDidChangeActiveTextEditor: ((listener, thisArg, disposables) =>
    state.activeEditorEmitter.event(listener, thisArg, disposables)) as Event<TextEditor | undefined>,
  onDidChangeVisibleTextEditors: new EventEmitter<TextEditor[]>().event,
  showErrorMessage: message("error"),
  showWarningMessage: message("warning"),
  showInformationMessage: message("information"),
  setStatusBarMessage(text: string): Disposable {
    state.statusMessages.push(text);
    return new Disposable();
  },
  createOutputChannel(name: string): FakeOutputChannel {
    const channel = new FakeOutputChannel(name);
    state.outputs.push(channel);
    return channel;
  },
  createQuickPick<T extends PickItem>(): FakeQuickPick<T> {
    const pick = new FakeQuickPick<T>();
    state.quickPicks.push(pick);
    return pick;
  },
  showQuickPick<T extends PickItem>(items: readonly T[]): Promise<T | undefined> {
    const index = state.picks.shift();
    return Promise.resolve(index === undefined ? undefined : items[index]);
  },
  showTextDocument(document: TextDocument, options?: unknown): Promise<TextEditor> {
    state.opened.push({ document, options });
    return Promise.resolve(new TextEditor(document));
  },
  withProgress<R>(
    _options: unknown,
    task: (progress: { report(value: unknown): void }, token: CancellationTokenSource["token"]) => Promise<R>,
  ): Promise<R> {
    return task({ report: () => undefined }, new CancellationTokenSource().token);
  },
};

let untitled = 0;

class Configuration {
  constructor(private readonly prefix: string) {}
  get<T>(key: string, fallback?: T): T | undefined {
    const full = this.prefix ? `${this.prefix}.${key}` : key;
    if (full in state.configuration) return state.configuration[full] as T;
    // A section asked as a whole (`get("lspMemory")`): its settings as nested objects, as
    // VS Code gives them (`lspMemory.trace.server` → `{trace: {server: …}}`).
    const inner = Object.entries(state.configuration).filter(([name]) => name.startsWith(`${full}.`));
    if (inner.length === 0) return fallback;
    const section: Record<string, unknown> = {};
    for (const [name, value] of inner) {
      const path = name.slice(full.length + 1).split(".");
      let node = section;
      for (const part of path.slice(0, -1)) {
        node = (node[part] ??= {}) as Record<string, unknown>;
      }
      node[path.at(-1) ?? ""] = value;
    }
    return section as T;
  }
  has(key: string): boolean {
    return this.get(key) !== undefined;
  }
  inspect(key: string): { key: string; globalValue?: unknown } {
    return { key, globalValue: this.get(key) };
  }
  update(): Promise<void> {
    return Promise.resolve();
  }
}

export const workspace = {
  get workspaceFolders() {
    return state.workspaceFolders;
  },
  get textDocuments(): TextDocument[] {
    return state.activeTextEditor ? [state.activeTextEditor.document] : [];
  },
  get notebookDocuments(): unknown[] {
    return [];
  },
  getConfiguration(section?: string): Configuration {
    return new Configuration(section ?? "");
  },
  // Through `state`, so that `reset()` gives a fresh emitter to everyone.
  onDidChangeConfiguration: ((listener, thisArg, disposables) =>
    state.configurationEmitter.event(listener, thisArg, disposables)) as Event<{
    affectsConfiguration(section: string): boolean;
  }>,
  /** A document of a registered scheme (its provider's content; Markdown for a `.md` path),
   * or a new untitled one. */
  openTextDocument(options: Uri | { language?: string; content?: string }): Promise<TextDocument> {
    if (options instanceof Uri) {
      const provider = state.providers.get(options.scheme);
      if (provider === undefined) return Promise.reject(new Error(`no provider for ${options.scheme}`));
      const language = options.path.endsWith(".md") ? "markdown" : "plaintext";
      return Promise.resolve(
        new TextDocument(options, language, provider.provideTextDocumentContent(options)),
      );
    }
    untitled++;
    return Promise.resolve(
      new TextDocument(
        Uri.parse(`untitled:Untitled-${untitled}`),
        options.language ?? "plaintext",
        options.content ?? "",
      ),
    );
  },
  onDidOpenTextDocument: new EventEmitter<TextDocument>().event,
  onDidCloseTextDocument: new EventEmitter<TextDocument>().event,
  onDidChangeTextDocument: new EventEmitter<unknown>().event,
  onDidSaveTextDocument: new EventEmitter<TextDocument>().event,
  onWillSaveTextDocument: new EventEmitter<unknown>().event,
  onDidChangeWorkspaceFolders: ((listener, thisArg, disposables) =>
    state.foldersEmitter.event(listener, thisArg, disposables)) as Event<unknown>,
  get isTrusted(): boolean {
    return state.trusted;
  },
  onDidGrantWorkspaceTrust: ((listener, thisArg, disposables) =>
    state.trustEmitter.event(listener, thisArg, disposables)) as Event<undefined>,
  createFileSystemWatcher(pattern: unknown): FakeWatcher {
    const watcher = new FakeWatcher(pattern);
    state.watchers.push(watcher);
    return watcher;
  },
  applyEdit(edit: WorkspaceEdit): Promise<boolean> {
    state.applied.push(edit);
    return Promise.resolve(true);
  },
  registerTextDocumentContentProvider(
    scheme: string,
    provider: { provideTextDocumentContent(uri: Uri): string },
  ): Disposable {
    state.providers.set(scheme, provider);
    return new Disposable(() => state.providers.delete(scheme));
  },
};

/** Sets settings (full ids: `"lspMemory.user"`) and fires `onDidChangeConfiguration`. */
export function configure(values: Record<string, unknown>): void {
  Object.assign(state.configuration, values);
  const changed = Object.keys(values);
  state.configurationEmitter.fire({
    affectsConfiguration: (section: string) =>
      changed.some((key) => key === section || key.startsWith(`${section}.`)),
  });
}

export const commands = {
  registerCommand(command: string, callback: (...args: unknown[]) => unknown): Disposable {
    if (state.commands.has(command)) throw new Error(`command '${command}' already exists`);
    state.commands.set(command, callback);
    return new Disposable(() => state.commands.delete(command));
  },
  executeCommand(command: string, ...args: unknown[]): Promise<unknown> {
    if (command === "setContext") {
      state.context.set(String(args[0]), args[1]);
      return Promise.resolve(undefined);
    }
    state.executed.push({ command, args });
    const callback = state.commands.get(command);
    return Promise.resolve(callback?.(...args));
  },
};

export const env = {
  language: "en",
  appName: "Visual Studio Code (test)",
  machineId: "test",
  clipboard: {
    writeText(text: string): Promise<void> {
      state.clipboard = text;
      return Promise.resolve();
    },
    readText(): Promise<string> {
      return Promise.resolve(state.clipboard);
    },
  },
  openExternal(): Promise<boolean> {
    return Promise.resolve(true);
  },
};

interface Filter {
  language?: string;
  scheme?: string;
  pattern?: string | RelativePattern;
}

/** A glob as a regular expression: `**` crosses `/`, `*` and `?` do not, `{a,b}` is either. */
function globRegExp(glob: string): RegExp {
  let source = "";
  for (let i = 0; i < glob.length; i++) {
    const c = glob.charAt(i);
    if (c === "*" && glob.charAt(i + 1) === "*") {
      source += glob.charAt(i + 2) === "/" ? "(?:.*/)?" : ".*";
      i += glob.charAt(i + 2) === "/" ? 2 : 1;
    } else if (c === "*") source += "[^/]*";
    else if (c === "?") source += "[^/]";
    else if (c === "{") source += "(?:";
    else if (c === "}") source += ")";
    else if (c === ",") source += "|";
    else source += c.replace(/[.+^$()|[\]\\]/g, "\\$&");
  }
  return new RegExp(`^${source}$`);
}

function matchesPattern(pattern: string | RelativePattern, uri: Uri): boolean {
  if (typeof pattern === "string") return globRegExp(pattern).test(uri.path);
  const base = pattern.baseUri.path.replace(/\/$/, "");
  if (!uri.path.startsWith(`${base}/`)) return false;
  return globRegExp(pattern.pattern).test(uri.path.slice(base.length + 1));
}

export const languages = {
  /** 10 when a filter matches the document's language, scheme and path, else 0 (as VS Code:
   * a relative pattern matches under its folder). */
  match(selector: (string | Filter)[] | string | Filter, document: TextDocument): number {
    const filters = Array.isArray(selector) ? selector : [selector];
    return filters.some((filter) => {
      const f = typeof filter === "string" ? { language: filter } : filter;
      if (f.language === undefined && f.scheme === undefined && f.pattern === undefined) return false;
      return (
        (f.language === undefined || f.language === document.languageId) &&
        (f.scheme === undefined || f.scheme === document.uri.scheme) &&
        (f.pattern === undefined || matchesPattern(f.pattern, document.uri))
      );
    })
      ? 10
      : 0;
  },
  setTextDocumentLanguage(document: TextDocument, language: string): Promise<TextDocument> {
    return Promise.resolve(new TextDocument(document.uri, language, document.text));
  },
  createLanguageStatusItem(id: string, selector: unknown): FakeLanguageStatusItem {
    const item = new FakeLanguageStatusItem(id, selector);
    state.languageStatusItems.push(item);
    return item;
  },
  createDiagnosticCollection(name?: string) {
    const entries = new Map<string, unknown>();
    return {
      name,
      set: (uri: Uri, diagnostics: unknown) => entries.set(uri.toString(), diagnostics),
      delete: (uri: Uri) => entries.delete(uri.toString()),
      clear: () => entries.clear(),
      forEach: () => undefined,
      get: (uri: Uri) => entries.get(uri.toString()),
      has: (uri: Uri) => entries.has(uri.toString()),
      dispose: () => undefined,
    };
  },
};

export const extensions = {
  getExtension: () => undefined,
  all: [],
};
