;;; driver.el --- Emacs eglot as a user drives it, against lsp-memory  -*- lexical-binding: t -*-

;; Run by tests/emacs/test_eglot.py as `emacs --batch -l driver.el'.  It starts the way a
;; user's Emacs does (the site's packages activated, then the init file: the README's eglot
;; snippets), visits a note, lets `eglot-ensure' start the server and then uses it through
;; eglot's own commands: `completion-at-point' and RET in *Completions*, eldoc, M-. and M-,,
;; flymake, `eglot-rename', and the README's `lsp-memory-build-context'.  It judges nothing:
;; it writes what a user would have seen as JSON, and the test asserts on that.
;;
;; Environment: LSP_MEMORY_EMACS_INIT (the init file), LSP_MEMORY_EMACS_DOC (the note to
;; visit), LSP_MEMORY_EMACS_OUT (the JSON to write; the eglot events log goes beside it as
;; .events), LSP_MEMORY_EMACS_CHECKS ("all", or "settings": start-up and one hover only).
;;
;; Batch Emacs never waits for input, so it is never idle: the idle timers that send
;; didChange and start flymake (and eldoc) never fire by themselves.  `driver-pause' runs
;; them, as a user's pause in typing would; `driver-command' runs the command hooks around a
;; command, as the command loop would.  Every wait has a deadline, and a watchdog writes what
;; was observed and exits if the whole run stalls.

(require 'cl-lib)
(require 'json)
(require 'subr-x)

(defconst driver-wait 30 "Seconds any one wait may take.")
(defconst driver-watchdog 150 "Seconds the whole run may take.")

(defvar driver-observed nil "Alist: check name -> what was seen, newest first.")
(defvar driver-log nil "The server's window/logMessage and showMessage texts, newest first.")
(defvar driver-connection nil "The eglot server, kept for its events log after shutdown.")

(defun driver-env (name)
  (or (getenv name) (error "%s is not set" name)))

(defun driver-record (name value)
  (push (cons name value) driver-observed))

(defun driver-write ()
  "Write the observations and the eglot events log; safe to call more than once."
  (let ((out (driver-env "LSP_MEMORY_EMACS_OUT"))
        (coding-system-for-write 'utf-8))
    (with-temp-file out
      (insert (json-encode
               `((observed . ,(reverse driver-observed))
                 (log . ,(vconcat (reverse driver-log)))))))
    (when driver-connection
      (let ((events (jsonrpc-events-buffer driver-connection)))
        (when (buffer-live-p events)
          (with-current-buffer events
            (write-region nil nil (concat out ".events") nil 'silent)))))))

(defun driver-finish (code)
  (driver-write)
  (kill-emacs code))

(defmacro driver-check (name &rest body)
  "Record BODY's value under NAME, or the error it signalled, and go on."
  (declare (indent 1))
  `(driver-record ,name
                  (condition-case err
                      (progn ,@body)
                    (error `((error . ,(error-message-string err)))))))

(defun driver-until (what predicate &optional seconds)
  "Process input until PREDICATE is non-nil and return its value; signal an error naming
WHAT after SECONDS (default `driver-wait')."
  (let ((deadline (+ (float-time) (or seconds driver-wait)))
        value)
    (while (and (not (setq value (funcall predicate)))
                (< (float-time) deadline))
      (accept-process-output nil 0.05))
    (or value (error "Timed out after %s s waiting for %s" (or seconds driver-wait) what))))

(defun driver-settle (seconds)
  "Process input for SECONDS."
  (let ((deadline (+ (float-time) seconds)))
    (while (< (float-time) deadline)
      (accept-process-output nil 0.05))))

(defun driver-pause ()
  "What Emacs does when the user stops typing: run the idle timers (eglot's didChange,
flymake's start, eldoc), which batch Emacs never does by itself."
  (dolist (timer (copy-sequence timer-idle-list))
    (timer-event-handler timer))
  (driver-settle 0.1))

(defun driver-server ()
  (with-current-buffer (driver-doc-buffer) (eglot-current-server)))

(defun driver-doc-buffer ()
  (or (find-buffer-visiting (driver-env "LSP_MEMORY_EMACS_DOC"))
      (error "The note is not visited")))

(defun driver-goto (needle &optional delta)
  "Move to DELTA characters into the first NEEDLE of the note (default 1: inside it)."
  (switch-to-buffer (driver-doc-buffer))
  (goto-char (point-min))
  (unless (search-forward needle nil t)
    (error "Not in the buffer: %s" needle))
  (goto-char (+ (match-beginning 0) (or delta 1))))

(defun driver-line ()
  (buffer-substring-no-properties (line-beginning-position) (line-end-position)))

(defun driver-diagnostics ()
  "The note's flymake diagnostics, as line (0-based), column, end column, type and text."
  (with-current-buffer (driver-doc-buffer)
    (vconcat
     (mapcar (lambda (d)
               (save-excursion
                 (goto-char (flymake-diagnostic-beg d))
                 `((line . ,(1- (line-number-at-pos)))
                   (column . ,(- (point) (line-beginning-position)))
                   (end . ,(- (flymake-diagnostic-end d) (line-beginning-position)))
                   (type . ,(symbol-name (flymake-diagnostic-type d)))
                   (text . ,(flymake-diagnostic-text d)))))
             (sort (flymake-diagnostics)
                   (lambda (a b) (< (flymake-diagnostic-beg a) (flymake-diagnostic-beg b))))))))

(defun driver-command (command &optional run)
  "Run COMMAND as the command loop does: `pre-command-hook', the command (or RUN, a function
of no arguments, for a command that would prompt), `post-command-hook'."
  (setq this-command command)
  (run-hooks 'pre-command-hook)
  (if run (funcall run) (call-interactively command))
  (setq last-command command)
  (run-hooks 'post-command-hook))

(defun driver-servers ()
  "How many eglot servers run."
  (let ((count 0))
    (maphash (lambda (_project servers) (setq count (+ count (length servers))))
             eglot--servers-by-project)
    count))

;;; The checks

(defun driver-start ()
  "Visit the note as `find-file' does, then run the post-command hook, where
`eglot-ensure' (from `markdown-mode-hook') connects."
  (driver-command 'find-file (lambda () (find-file (driver-env "LSP_MEMORY_EMACS_DOC"))))
  (driver-until "eglot to manage the note" (lambda () (bound-and-true-p eglot--managed-mode)))
  ;; flymake, turned on by eglot, starts after the next command.
  (driver-command 'ignore)
  (let ((server (setq driver-connection (eglot-current-server))))
    `((mode . ,(symbol-name major-mode))
      (language . ,(eglot--language-id server))
      (root . ,(expand-file-name (project-root (eglot--project server))))
      (folders . ,(vconcat (mapcar (lambda (folder) (plist-get folder :uri))
                                   (eglot-workspace-folders server)))))))

(defun driver-hover (needle &optional delta)
  "What eldoc shows with point on NEEDLE (C-h . or the echo area), and how many places
eglot then highlights (its documentHighlight rides on eldoc)."
  (driver-goto needle delta)
  (driver-pause)
  (let (shown)
    (add-hook 'eldoc-display-functions
              (lambda (docs _interactive) (setq shown docs)) nil t)
    (driver-command 'eldoc-print-current-symbol-info)
    (driver-until (format "eldoc on %s" needle) (lambda () shown))
    (ignore-errors (driver-until "highlights" (lambda () eglot--highlights) 5))
    `((text . ,(mapconcat (lambda (doc) (substring-no-properties (car doc))) shown "\n"))
      (highlights . ,(length (bound-and-true-p eglot--highlights))))))

(defun driver-definition (needle &optional delta)
  "M-. on NEEDLE: the file it visits and the line it lands on, then M-, back."
  (driver-goto needle delta)
  (driver-pause)
  (driver-command 'xref-find-definitions)
  (driver-settle 0.3)
  (prog1 `((file . ,buffer-file-name)
           (line . ,(driver-line))
           (managed . ,(if (bound-and-true-p eglot--managed-mode) t :json-false))
           (servers . ,(driver-servers)))
    (driver-command 'xref-pop-marker-stack)
    (unless (eq (current-buffer) (driver-doc-buffer))
      (error "M-, did not return to the note"))))

(defun driver-complete (needle choose)
  "Point after NEEDLE, `completion-at-point' (C-M-i); when it lists candidates in
*Completions*, RET on CHOOSE there.  What was listed, and the line and cursor after."
  (driver-goto needle (length needle))
  (driver-pause)
  (when (get-buffer "*Completions*")
    (kill-buffer "*Completions*"))
  (driver-command 'completion-at-point)
  (let* ((window (get-buffer-window "*Completions*"))
         (listed (and window (driver-listed window))))
    (when window
      (with-selected-window window
        (goto-char (point-min))
        (while (and (not (eobp))
                    (not (equal (driver-candidate-at-point) choose)))
          (goto-char (or (next-single-property-change (point) 'mouse-face) (point-max))))
        (when (eobp)
          (error "%s is not among the candidates %S" choose listed))
        (driver-command 'choose-completion)))
    (driver-pause)
    `((listed . ,(and listed (vconcat listed)))
      (line . ,(driver-line))
      (after_cursor . ,(buffer-substring-no-properties (point) (line-end-position))))))

(defun driver-candidate-at-point ()
  (let ((string (get-text-property (point) 'completion--string)))
    (and string (get-text-property (point) 'mouse-face) (substring-no-properties string))))

(defun driver-listed (window)
  "The candidates *Completions* lists in WINDOW, in order."
  (with-current-buffer (window-buffer window)
    (save-excursion
      (goto-char (point-min))
      (let (found)
        (while (not (eobp))
          (let ((candidate (driver-candidate-at-point)))
            (when candidate (push candidate found)))
          (goto-char (or (next-single-property-change (point) 'mouse-face) (point-max))))
        (delete-dups (nreverse found))))))

(defun driver-wait-diagnostics (what predicate &optional seconds)
  "Pause and wait until the note's diagnostics satisfy PREDICATE; return them."
  (driver-until what
                (lambda ()
                  (driver-pause)
                  (let ((found (driver-diagnostics)))
                    (and (funcall predicate found) found)))
                seconds))

(defun driver-diagnostic-with (diagnostics text)
  (cl-find-if (lambda (d) (string-match-p (regexp-quote text) (alist-get 'text d)))
              diagnostics))

(defun driver-rename (needle new-name)
  "M-x eglot-rename on NEEDLE to NEW-NAME; eglot asks before editing files that are not
visited, and the user says yes.  Then C-x s saves every buffer."
  (driver-goto needle)
  (driver-pause)
  (let (asked)
    (cl-letf (((symbol-function 'y-or-n-p) (lambda (prompt) (push prompt asked) t)))
      (driver-command 'eglot-rename (lambda () (eglot-rename new-name))))
    (driver-command 'save-some-buffers (lambda () (save-some-buffers t)))
    (switch-to-buffer (driver-doc-buffer))
    `((asked . ,(vconcat (nreverse asked)))
      (line . ,(progn (driver-goto new-name 0) (driver-line))))))

(defun driver-build-context ()
  "M-x lsp-memory-build-context (the README's command): the buffer it shows."
  (switch-to-buffer (driver-doc-buffer))
  (driver-pause)
  (driver-command 'lsp-memory-build-context)
  (with-current-buffer "*lsp-memory context*"
    (buffer-substring-no-properties (point-min) (point-max))))

(defun driver-shutdown ()
  "C-u M-x eglot-shutdown (keeping its buffers): how the server ended and what it wrote to
stderr.  eglot 1.9 kills the process right after the exit notification, so its status is
signal 9 unless the server was quicker."
  (let* ((server (driver-server))
         (process (jsonrpc--process server))
         (stderr (jsonrpc-stderr-buffer server)))
    (driver-command 'eglot-shutdown (lambda () (eglot-shutdown server nil nil t)))
    (driver-until "the server to exit" (lambda () (not (process-live-p process))))
    `((how . ,(symbol-name (process-status process)))
      (status . ,(process-exit-status process))
      (stderr . ,(if (buffer-live-p stderr)
                     (with-current-buffer stderr (buffer-string))
                   "")))))

(defun driver-all ()
  (driver-check "start" (driver-start))
  (driver-check "diagnostics"
    (driver-wait-diagnostics "diagnostics of the note"
                             (lambda (found) (> (length found) 0))))
  (driver-check "hover @leaf_active_a001" (driver-hover "@leaf_active_a001"))
  (driver-check "hover #42" (driver-hover "#42"))
  (driver-check "hover [[Project Plan]]" (driver-hover "[[Project Plan]]" 3))
  (driver-check "definition [[Project Plan]]" (driver-definition "[[Project Plan]]" 3))
  (driver-check "definition @leaf_active_a001" (driver-definition "@leaf_active_a001"))
  (driver-check "complete @pre" (driver-complete "@pre" "@prefer_morning_a3f2"))
  (driver-check "complete #4" (driver-complete "number: #4" "#42"))
  (driver-check "complete [[Proj" (driver-complete "note: [[Proj" "Project Plan"))
  (driver-check "complete typed @leaf_c"
    (driver-goto "Remember me" 0)
    (end-of-line)
    (insert "\nTyped: @leaf_c")
    (driver-complete "Typed: @leaf_c" "@leaf_ctx"))
  (driver-check "diagnostics after completing"
    (driver-wait-diagnostics "the diagnostics of @pre and #4 to go"
                             (lambda (found)
                               (not (or (driver-diagnostic-with found "ID: pre")
                                        (driver-diagnostic-with found "Claim #4 "))))))
  (driver-check "build context" (driver-build-context))
  (driver-check "rename [[Project Plan]]" (driver-rename "[[Project Plan]]" "Project Roadmap"))
  (driver-check "rename @leaf_active_a001" (driver-rename "@leaf_active_a001" "leaf_postgres"))
  (driver-check "shutdown" (driver-shutdown)))

(defun driver-settings ()
  (driver-check "start" (driver-start))
  ;; The editor's settings replace the server's first session: hover once the second is ready.
  (driver-check "ready"
    (driver-until "the server's index ready message"
                  (lambda ()
                    (cl-find-if (lambda (m) (string-match-p "index ready" m)) driver-log))))
  (driver-check "hover @leaf_active_a001" (driver-hover "@leaf_active_a001"))
  (driver-check "diagnostics"
    (driver-wait-diagnostics "diagnostics of the note"
                             (lambda (found) (> (length found) 0))
                             10)))

(defun driver-main ()
  (run-at-time driver-watchdog nil
               (lambda ()
                 (driver-record "watchdog" `((error . ,(format "the run took over %s s"
                                                               driver-watchdog))))
                 (driver-finish 3)))
  (advice-add 'eglot-handle-notification :before
              (lambda (_server method &rest params)
                (when (memq method '(window/logMessage window/showMessage))
                  (push (plist-get params :message) driver-log))))
  ;; As a user's Emacs starts: the site's packages (Debian's elpa-eglot), then the init file.
  (package-activate-all)
  (load (driver-env "LSP_MEMORY_EMACS_INIT") nil t)
  (pcase (driver-env "LSP_MEMORY_EMACS_CHECKS")
    ("all" (driver-all))
    ("settings" (driver-settings))
    (other (error "Unknown LSP_MEMORY_EMACS_CHECKS: %s" other))))

(condition-case err
    (progn (driver-main) (driver-finish 0))
  (error
   (driver-record "driver" `((error . ,(error-message-string err))))
   (driver-finish 2)))

;;; driver.el ends here
