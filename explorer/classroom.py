"""A class in the explorer: the rules of a class and the store of its classes, questions and answers.

A teacher starts a class and gets a short code; students join with it (no account, no name: a
random id their browser keeps); the teacher shows a sentence and a step, asks a question about
that step, and reveals the answer. :mod:`explorer.class_api` is the Gradio side (the endpoints
and the page's view); this module is stdlib only, so ``app.py`` can open the store before it
imports Gradio, and a test can run a class without a server.

The store is one interface, :class:`ClassStore`, with one implementation on SQLite
(:class:`SqliteClassStore`): a server database could replace it behind the same operations. The
rules every implementation shares (codes, limits, what an answer may hold) are the functions and
constants here. Nothing personal is kept: a student is a random id, an answer is its cleaned
text; a class and everything in it is deleted :data:`EXPIRY_S` after its last activity.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import html
import json
import os
import re
import secrets
import sqlite3
import threading
import time
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Protocol

# Letters that cannot be mistaken for another letter or a digit, on a projector or read aloud:
# no O or Q (0), I or L (1), S (5), Z (2), B (8), G (6), U or V (each other), N (M, aloud).
ALPHABET = "ACDEFHJKMPRTWXY"
CODE_LENGTH = 5
MAX_STUDENTS = 300
MAX_ANSWER_CHARS = 40
MAX_TEXT_CHARS = 2000  # a class's sentence: what the teacher translated, a sentence or two
EXPIRY_S = 6 * 3600  # a class and its answers go this long after the last activity
PURGE_EVERY_S = 60.0  # expired classes are deleted by the writes, at most this often
KINDS = ("next_word", "source_token", "layer")
CHOICE_KINDS = ("source_token", "layer")  # answered by picking one of the question's choices
VIEWS = ("cross", "decoder", "encoder", "rollout")  # the attention views of web/attention.js
ORIGINS = ("translate", "whatif", "beam")
STUDENT_ID = re.compile(r"[A-Za-z0-9_-]{12,64}")
DB_ENV = "EXPLORER_CLASS_DB"

# Markup and control characters never reach a chart: tags (script and style with their
# content), comments, and control, format and bidi characters.
TEACHER_KEY_CHARS = 32  # hex digits of a teacher's key (128 bits)
MARKUP = re.compile(r"<(script|style)\b[^>]*>.*?(</\1\s*>|$)|<!--.*?(-->|$)|</?[A-Za-z!][^<>]*>", re.I | re.S)
ANSI = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)?|[@-Z\\-_])")  # terminal colour codes


class ClassError(ValueError):
    """Input a class refuses, or a class, student or question that is not there: its message is
    the one line the caller sees (``explorer.serving.api_answer`` turns a ``ValueError`` into it)."""


class ClassGone(ClassError):
    """The class is not there: a wrong code, or a class that ended or expired."""

    reason = "gone"


class NotTeacher(ClassError):
    """The teacher's key is missing or wrong: showing, asking, revealing and ending are the
    teacher's, whose page got the key when it started the class."""

    reason = "teacher"


class NotInClass(ClassError):
    """The student id is not one of the class's (a page that kept the id of an older class)."""

    reason = "stranger"


def default_db_path() -> Path:
    """Where classes live unless ``--class-db`` or ``$EXPLORER_CLASS_DB`` says otherwise: beside the
    app's other data, ``~/.cache/inside-the-transformer/classes.sqlite3``."""
    if os.environ.get(DB_ENV):
        return Path(os.environ[DB_ENV]).expanduser()
    return Path.home() / ".cache" / "inside-the-transformer" / "classes.sqlite3"


# --- the rules ------------------------------------------------------------------------------------
def new_code() -> str:
    return "".join(secrets.choice(ALPHABET) for _ in range(CODE_LENGTH))


def check_code(code) -> str:
    """``code`` as stored (capitals, no spaces or dashes), or :class:`ClassError` in words."""
    text = re.sub(r"[\s-]", "", code).upper() if isinstance(code, str) else ""
    if len(text) == CODE_LENGTH and all(c in ALPHABET for c in text):
        return text
    rule = f"A class code is {CODE_LENGTH} letters from {' '.join(ALPHABET)}, like “KTXAP”"
    if not text:
        raise ClassError(f"Type the class code. {rule}.")
    raise ClassError(f"{rule}: “{' '.join(str(code).split())[:20]}” is not one.")


def check_student(student) -> str:
    if isinstance(student, str) and STUDENT_ID.fullmatch(student.strip()):
        return student.strip()
    raise ClassError("That is not a student of this app: join the class with its code first.")


def check_kind(kind) -> str:
    if kind in KINDS:
        return kind
    shown = str(kind)[:30]
    raise ClassError(f"A question is one of {', '.join(KINDS)}; “{shown}” is not one.")


def whole(value, what: str, lo: int, hi: int) -> int:
    """``value`` as a whole number in [lo, hi] (an int, a float without a fraction, or its digits)."""
    number = None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    elif isinstance(value, str) and value.strip().isdigit():
        number = int(value.strip())
    if number is None or not lo <= number <= hi:
        raise ClassError(f"The {what} must be a whole number from {lo} to {hi}, got “{str(value)[:20]}”.")
    return number


def clean_answer(text) -> str:
    """An answer as it is counted: markup and control characters out, spaces collapsed, at most
    :data:`MAX_ANSWER_CHARS` characters; nothing left, or too long, is a :class:`ClassError`."""
    text = text if isinstance(text, str) else ("" if text is None else str(text))
    text = MARKUP.sub(" ", ANSI.sub("", html.unescape(text) if "&" in text else text))
    # control (Cc), format (Cf: bidi overrides, zero-width) and the tokenizer's word mark
    text = "".join(" " if unicodedata.category(c) in ("Cc", "Cf") or c == "▁" else c for c in text)
    text = " ".join(text.split())
    if not text:
        raise ClassError("Type an answer (a word), or pick one of the choices.")
    if len(text) > MAX_ANSWER_CHARS:
        raise ClassError(f"An answer has at most {MAX_ANSWER_CHARS} characters; this one has {len(text)}.")
    return text


def counted(question: Question, text) -> str:
    """The answer to ``question`` as the tally counts it: a typed word without case (so "Il" and
    "il" are one bar), or the number of the choice picked (1-based, as on screen)."""
    answer = clean_answer(text)
    if question.kind not in CHOICE_KINDS:
        return answer.casefold()
    n = len(question.choices)
    if answer.isdigit() and 1 <= int(answer) <= n:
        return str(int(answer))
    # a choice named by its text, where only one choice has it
    named = [i + 1 for i, c in enumerate(question.choices) if c.casefold() == answer.casefold()]
    if len(named) == 1:
        return str(named[0])
    if named:
        places = " or ".join(map(str, named))
        raise ClassError(f"“{answer}” is choice {places}: answer with its number.")
    raise ClassError(f"Pick one of the {n} choices: answer with its number, 1 to {n}; “{answer}” is not one.")


@dataclass(frozen=True)
class View:
    """What the class sees: the teacher's sentence (and the forced version of it, if any), the
    step (1-based) and the attention view, layer (1-based) and head ("mean", "max" or "1".."H")."""

    text: str
    step: int = 1
    view: str = "cross"
    layer: int = 1
    head: str = "mean"
    forced: tuple[int, ...] = ()
    origin: str = "translate"

    def checked(self) -> View:
        text = self.text if isinstance(self.text, str) else ""
        if not text.strip():
            raise ClassError("Show the class a sentence: translate one first.")
        if len(text) > MAX_TEXT_CHARS:
            raise ClassError(f"A class's sentence has at most {MAX_TEXT_CHARS:,} characters, not {len(text):,}.")
        if self.view not in VIEWS:
            raise ClassError(f"The view is one of {', '.join(VIEWS)}; “{str(self.view)[:20]}” is not one.")
        head = str(self.head)
        if head not in ("mean", "max") and not (head.isdigit() and 1 <= int(head) <= 64):
            raise ClassError(f"The head is mean, max or a number from 1 to 64; “{head[:20]}” is not one.")
        forced = tuple(whole(i, "forced token id", 0, 10**7) for i in (self.forced or ())[:512])
        origin = self.origin if self.origin in ORIGINS and (forced or self.origin == "translate") else "translate"
        return View(
            text,
            whole(self.step, "step", 1, 1024),
            self.view,
            whole(self.layer, "layer", 1, 64),
            head,
            forced if origin != "translate" else (),
            origin,
        )

    def to_dict(self) -> dict:
        return {**asdict(self), "forced": list(self.forced)}


def view_of(fields: dict) -> View:
    """A :class:`View` from its ``to_dict()``."""
    return View(**{**fields, "forced": tuple(fields.get("forced") or ())})


@dataclass(frozen=True)
class Question:
    id: int
    kind: str
    text: str  # the sentence it is asked on
    step: int  # the step it is about, 1-based
    choices: tuple[str, ...]  # what a student may pick (the source tokens, the layers, a few words)
    status: str  # "open", "revealed" (answers shown) or "closed" (another question came)

    def to_dict(self) -> dict:
        return {**asdict(self), "choices": list(self.choices)}


@dataclass(frozen=True)
class Tally:
    """Each answer with its count, most first; ``answered``: how many students answered."""

    question: Question
    counts: tuple[tuple[str, int], ...]
    answered: int
    students: int

    def to_dict(self) -> dict:
        q = self.question
        label = (lambda a: q.choices[int(a) - 1]) if q.kind in CHOICE_KINDS else (lambda a: a)
        return {
            "question": q.id,
            "kind": q.kind,
            "status": q.status,
            "answered": self.answered,
            "students": self.students,
            "answers": [{"answer": a, "label": label(a), "count": n} for a, n in self.counts],
        }


@dataclass(frozen=True)
class ClassState:
    """What a student's page follows: the view, the current question (open or revealed), the
    student's own answer to it, and the tally once it is revealed."""

    code: str
    students: int
    view: View | None = None
    question: Question | None = None
    mine: str | None = None
    tally: Tally | None = field(default=None)

    def to_dict(self) -> dict:
        return {
            "code": self.code,
            "students": self.students,
            "view": self.view.to_dict() if self.view else None,
            "question": self.question.to_dict() if self.question else None,
            "mine": self.mine,
            "tally": self.tally.to_dict() if self.tally else None,
        }


class ClassStore(Protocol):
    """The operations of a class. Every one checks its input by the rules above and raises
    :class:`ClassError` for bad input or an unknown or expired class, student or question; each
    write counts as the class's activity. Safe to call from many threads at once."""

    def start(self) -> str:
        """A new class; its code."""

    def join(self, code: str) -> str:
        """A new student of class ``code`` (at most :data:`MAX_STUDENTS`); their random id."""

    def show(self, code: str, view: View) -> View:
        """What the class sees from now on (checked); returns it."""

    def ask(self, code: str, kind: str, view: View, step: int, choices: Sequence[str]) -> Question:
        """A new question of ``kind`` about step ``step`` of ``view``'s sentence (the class now
        sees ``view``, usually the step before); the previous one closes."""

    def answer(self, code: str, student: str, question: int, text: str) -> str:
        """Record a student's answer (a second replaces the first); returns it as counted."""

    def reveal(self, code: str, question: int) -> Tally:
        """Close ``question`` to answers, show its tally to the class, and move the class to the
        step it asked about."""

    def tally(self, code: str, question: int) -> Tally: ...

    def state(self, code: str, student: str | None = None) -> ClassState: ...

    def end(self, code: str) -> None:
        """Delete the class and everything in it."""

    def teacher_key(self, code: str) -> str:
        """The key of class ``code``'s teacher: what :meth:`check_teacher` takes. It is given once,
        to the page or caller that started the class, and survives a restart of the server."""

    def check_teacher(self, code: str, key) -> None:
        """Raise :class:`NotTeacher` unless ``key`` is the teacher key of class ``code``."""

    def purge(self) -> int:
        """Delete every class whose last activity is :data:`EXPIRY_S` old; how many went."""

    def close(self) -> None: ...


# --- SQLite ---------------------------------------------------------------------------------------
SCHEMA = """
CREATE TABLE IF NOT EXISTS classes (
  code TEXT PRIMARY KEY,
  active REAL NOT NULL,      -- the last activity: the class goes EXPIRY_S after it
  view TEXT,                 -- what the class sees (View as JSON), NULL until the teacher shows a sentence
  question INTEGER           -- the current question (open or revealed), or NULL
);
CREATE INDEX IF NOT EXISTS classes_active ON classes(active);
CREATE TABLE IF NOT EXISTS students (
  code TEXT NOT NULL REFERENCES classes(code) ON DELETE CASCADE,
  id TEXT NOT NULL,
  PRIMARY KEY (code, id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS questions (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  code TEXT NOT NULL REFERENCES classes(code) ON DELETE CASCADE,
  kind TEXT NOT NULL,
  text TEXT NOT NULL,
  step INTEGER NOT NULL,
  choices TEXT NOT NULL,     -- JSON list
  status TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS questions_code ON questions(code);
CREATE TABLE IF NOT EXISTS answers (
  question INTEGER NOT NULL REFERENCES questions(id) ON DELETE CASCADE,
  student TEXT NOT NULL,
  answer TEXT NOT NULL,
  PRIMARY KEY (question, student)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS answers_by_answer ON answers(question, answer);
CREATE TABLE IF NOT EXISTS secrets (
  name TEXT PRIMARY KEY,
  value TEXT NOT NULL        -- made once per file: a teacher's key is an HMAC of the class's code with it
);
"""


class SqliteClassStore:
    """:class:`ClassStore` in one SQLite file, in WAL mode (readers never wait for the writer),
    one connection per thread (Gradio runs handlers in a pool of threads), every write one short
    ``BEGIN IMMEDIATE`` transaction, so a check and the write it guards (a class's room, a
    question still open) are never split by another request. ``clock``: seconds, for expiry
    (tests pass their own)."""

    def __init__(self, path: str | Path, clock: Callable[[], float] = time.time) -> None:
        self.path = Path(path).expanduser()
        self.clock = clock
        self._local = threading.local()
        self._lock = threading.Lock()
        self._writer = threading.Lock()
        self._connections: list[sqlite3.Connection] = []
        self._closed = False
        self._purged = -float("inf")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        db = self._db()
        db.execute("PRAGMA journal_mode=WAL")
        db.executescript(SCHEMA)
        db.execute("INSERT OR IGNORE INTO secrets (name, value) VALUES ('teacher', ?)", (secrets.token_hex(32),))
        self._secret = bytes.fromhex(db.execute("SELECT value FROM secrets WHERE name = 'teacher'").fetchone()[0])
        self.purge()

    # --- connections and transactions ---------------------------------------------------------
    def _db(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is not None:
            return db
        with self._lock:
            if self._closed:
                raise sqlite3.ProgrammingError("the class store is closed")
            # autocommit (isolation_level None): transactions are only the ones written below
            db = sqlite3.connect(self.path, timeout=30, isolation_level=None, check_same_thread=False)
            self._connections.append(db)
        db.execute("PRAGMA foreign_keys=ON")
        db.execute("PRAGMA synchronous=NORMAL")  # with WAL: durable at each checkpoint, safe from corruption
        db.execute("PRAGMA busy_timeout=30000")
        self._local.db = db
        return db

    @contextlib.contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction. This process's writers take turns on a lock first: SQLite's own
        wait for a busy database sleeps in steps of up to 100 ms, far longer than a write takes;
        the lock hands over at once (another process's writer still meets busy_timeout)."""
        db = self._db()
        with self._writer:
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")

    @contextlib.contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        """One snapshot for several SELECTs."""
        db = self._db()
        db.execute("BEGIN")
        try:
            yield db
        finally:
            db.execute("COMMIT")

    def close(self) -> None:
        with self._lock:
            self._closed = True
            for db in self._connections:
                db.close()
            self._connections.clear()

    # --- what every operation checks ----------------------------------------------------------
    def _class(self, db, code: str) -> tuple:
        """(active, view, question) of live class ``code``, or ClassError."""
        row = db.execute("SELECT active, view, question FROM classes WHERE code = ?", (code,)).fetchone()
        if row is None or row[0] < self.clock() - EXPIRY_S:
            raise ClassGone(
                f"There is no class “{code}”: check the code (a class ends {EXPIRY_S // 3600} hours after its "
                "last activity)."
            )
        return row

    def _touch(self, db, code: str) -> None:
        db.execute("UPDATE classes SET active = ? WHERE code = ?", (self.clock(), code))

    def _question(self, db, code: str, question) -> Question:
        try:
            qid = whole(question, "question", 1, 2**62)
        except ClassError:
            raise ClassError(f"Class {code} has no question “{str(question)[:20]}”.") from None
        row = db.execute(
            "SELECT id, kind, text, step, choices, status FROM questions WHERE id = ? AND code = ?", (qid, code)
        ).fetchone()
        if row is None:
            raise ClassError(f"Class {code} has no question {qid}.")
        return Question(row[0], row[1], row[2], row[3], tuple(json.loads(row[4])), row[5])

    def _students(self, db, code: str) -> int:
        return db.execute("SELECT count(*) FROM students WHERE code = ?", (code,)).fetchone()[0]

    def _maybe_purge(self, db) -> None:
        now = self.clock()
        if now - self._purged >= PURGE_EVERY_S:
            self._purged = now
            db.execute("DELETE FROM classes WHERE active < ?", (now - EXPIRY_S,))

    # --- the operations ---------------------------------------------------------------------------
    def start(self) -> str:
        with self._write() as db:
            self._maybe_purge(db)
            for _ in range(100):
                code = new_code()
                taken = db.execute("SELECT 1 FROM classes WHERE code = ?", (code,)).fetchone()
                if taken is None:
                    db.execute("INSERT INTO classes (code, active) VALUES (?, ?)", (code, self.clock()))
                    return code
        raise ClassError("No class code is free just now; try again in a minute.")

    def join(self, code: str) -> str:
        code = check_code(code)
        student = secrets.token_urlsafe(12)
        with self._write() as db:
            self._class(db, code)
            if self._students(db, code) >= MAX_STUDENTS:
                raise ClassError(f"Class {code} is full: it has {MAX_STUDENTS} students, the most a class can have.")
            db.execute("INSERT INTO students (code, id) VALUES (?, ?)", (code, student))
            self._touch(db, code)
            self._maybe_purge(db)
        return student

    def show(self, code: str, view: View) -> View:
        code, view = check_code(code), view.checked()
        with self._write() as db:
            self._class(db, code)
            db.execute("UPDATE classes SET view = ? WHERE code = ?", (json.dumps(view.to_dict()), code))
            self._touch(db, code)
        return view

    def ask(self, code: str, kind: str, view: View, step: int, choices: Sequence[str]) -> Question:
        code, kind, view, step = check_code(code), check_kind(kind), view.checked(), whole(step, "step", 1, 1024)
        choices = tuple(str(c)[:MAX_ANSWER_CHARS] for c in choices)
        if kind in CHOICE_KINDS and not choices:
            raise ClassError(f"A {kind} question needs choices to pick from.")
        with self._write() as db:
            _, _, current = self._class(db, code)
            if current is not None:
                db.execute("UPDATE questions SET status = 'closed' WHERE id = ? AND status = 'open'", (current,))
            qid = db.execute(
                "INSERT INTO questions (code, kind, text, step, choices, status) VALUES (?, ?, ?, ?, ?, 'open')",
                (code, kind, view.text, step, json.dumps(choices, ensure_ascii=False)),
            ).lastrowid
            db.execute(
                "UPDATE classes SET question = ?, view = ? WHERE code = ?", (qid, json.dumps(view.to_dict()), code)
            )
            self._touch(db, code)
        return Question(qid, kind, view.text, step, choices, "open")

    def answer(self, code: str, student: str, question: int, text: str) -> str:
        code, student = check_code(code), check_student(student)
        with self._write() as db:
            self._class(db, code)
            if db.execute("SELECT 1 FROM students WHERE code = ? AND id = ?", (code, student)).fetchone() is None:
                raise NotInClass(f"You are not in class {code}: join it again with its code.")
            q = self._question(db, code, question)
            if q.status != "open":
                why = "the teacher has shown the answer" if q.status == "revealed" else "the teacher asked another one"
                raise ClassError(f"That question is closed: {why}.")
            answer = counted(q, text)
            db.execute(
                "INSERT INTO answers (question, student, answer) VALUES (?, ?, ?) "
                "ON CONFLICT (question, student) DO UPDATE SET answer = excluded.answer",
                (q.id, student, answer),
            )
            self._touch(db, code)
        return answer

    def reveal(self, code: str, question: int) -> Tally:
        code = check_code(code)
        with self._write() as db:
            _, view, _ = self._class(db, code)
            q = self._question(db, code, question)
            if q.status == "open":
                db.execute("UPDATE questions SET status = 'revealed' WHERE id = ?", (q.id,))
                q = replace(q, status="revealed")
                # the class now sees the step asked about, with its answer
                shown = view_of(json.loads(view)) if view else None
                if shown is not None and shown.text == q.text:
                    moved = json.dumps(replace(shown, step=q.step).to_dict())
                    db.execute("UPDATE classes SET view = ? WHERE code = ?", (moved, code))
            self._touch(db, code)
            return self._tally(db, code, q)

    def _tally(self, db, code: str, q: Question) -> Tally:
        counts = db.execute(
            "SELECT answer, count(*) AS n FROM answers WHERE question = ? GROUP BY answer ORDER BY n DESC, answer",
            (q.id,),
        ).fetchall()
        return Tally(q, tuple((a, n) for a, n in counts), sum(n for _, n in counts), self._students(db, code))

    def tally(self, code: str, question: int) -> Tally:
        code = check_code(code)
        with self._read() as db:
            self._class(db, code)
            return self._tally(db, code, self._question(db, code, question))

    def state(self, code: str, student: str | None = None) -> ClassState:
        code = check_code(code)
        with self._read() as db:
            _, view, current = self._class(db, code)
            view = view_of(json.loads(view)) if view else None
            q = self._question(db, code, current) if current is not None else None
            mine = None
            if q is not None and student:
                row = db.execute(
                    "SELECT answer FROM answers WHERE question = ? AND student = ?", (q.id, str(student))
                ).fetchone()
                mine = row[0] if row else None
            tally = self._tally(db, code, q) if q is not None and q.status == "revealed" else None
            return ClassState(code, self._students(db, code), view, q, mine, tally)

    def end(self, code: str) -> None:
        code = check_code(code)
        with self._write() as db:
            self._class(db, code)
            db.execute("DELETE FROM classes WHERE code = ?", (code,))

    def teacher_key(self, code: str) -> str:
        return hmac.new(self._secret, check_code(code).encode(), hashlib.sha256).hexdigest()[:TEACHER_KEY_CHARS]

    def check_teacher(self, code: str, key) -> None:
        if not isinstance(key, str) or not hmac.compare_digest(key, self.teacher_key(code)):
            raise NotTeacher(
                "Only the teacher who started this class can do that (the page that started it has its key)."
            )

    def purge(self) -> int:
        with self._write() as db:
            self._purged = self.clock()
            return db.execute("DELETE FROM classes WHERE active < ?", (self._purged - EXPIRY_S,)).rowcount


# --- the process's store: every page of the app shares one --------------------------------------
_current: ClassStore | None = None
_current_lock = threading.Lock()


def use_store(path: str | Path | None = None) -> ClassStore:
    """Open the store at ``path`` (:func:`default_db_path` if None) as the process's store; an
    unusable path raises ``OSError`` or ``sqlite3.Error`` here, before the app serves."""
    global _current
    store = SqliteClassStore(default_db_path() if path is None else path)
    with _current_lock:
        old, _current = _current, store
    if old is not None:
        old.close()
    return store


def current_store() -> ClassStore:
    """The process's store: the one :func:`use_store` opened, else the default one, opened now."""
    with _current_lock:
        if _current is not None:
            return _current
    return use_store()
