"""Which category a claim belongs to, offline: ``lsp-memory classify`` and every claim written
without a type.

The built-in classifier is a multinomial logistic regression over three kinds of features of a
statement: its words, their crude stems and word pairs (what the labelled statements taught
it), and hand-written cues (``CUES``: "prefer", "allergic", "my sister", "want to", a version
number …), which carry what a few hundred examples cannot teach about words they never saw.
Its weights ship in ``data/classifier.json``; ``python -m benchmarks.classify --train``
rebuilds them from ``tests/data/categories.jsonl`` with ``train``. Scoring is a few dictionary
lookups and regular expressions per statement, so it runs on every write.

An optional external program (``classifier_command``, a local LLM say) may answer instead; when
it fails in any way the built-in classifier answers and one warning says why.
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from lsp_memory.model import CATEGORIES
from lsp_memory.services.kernel.command import CommandFailed, ask

PERSONAL = frozenset(CATEGORIES) - {"technical"}
PERSONAL_MARGIN = 0.5
"""``technical`` wins only when it is at least 1 / PERSONAL_MARGIN times as likely as the best
personal category: when in doubt, personal beats technical."""
MODEL_FILE = "classifier.json"

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Decision:
    """A category, how sure the classifier is of it (0–1), and its second choice."""

    category: str
    confidence: float
    runner_up: str


# -- features ---------------------------------------------------------------------------------

_CONTRACTIONS = (
    (
        re.compile(
            r"\b(can|won|don|doesn|didn|isn|aren|wasn|weren|couldn|shouldn|wouldn|haven|"
            r"hasn|mustn|ain)'?t\b"
        ),
        None,
    ),
    (re.compile(r"\bi'm\b"), "i am"),
    (re.compile(r"\b(i|we|you|they)'ve\b"), r"\1 have"),
    (re.compile(r"\b(i|we|you|they|he|she)'d\b"), r"\1 would"),
    (re.compile(r"\b(i|we|you|they|he|she)'ll\b"), r"\1 will"),
    (re.compile(r"\b(we|you|they)'re\b"), r"\1 are"),
    (re.compile(r"\b(he|she|it|that|there)'s\b"), r"\1 is"),
)
_NEGATED = {"can": "can not", "won": "will not", "ain": "is not"}
_WORD = re.compile(r"[a-z0-9£$€%]+(?:[-'][a-z0-9]+)*")
_SUFFIXES = ("ing", "ed", "es", "ly", "s")


def normalise(text: str) -> str:
    """Lower case, straight apostrophes, contractions spelled out (``i'm`` → ``i am``), so
    that "I can't" and "I cannot" look alike."""
    lowered = text.lower().replace("’", "'").replace("‘", "'").replace("cannot", "can not")
    for pattern, replacement in _CONTRACTIONS:
        if replacement is None:
            lowered = pattern.sub(lambda m: _NEGATED.get(m[1], m[1][:-1] + " not"), lowered)
        else:
            lowered = pattern.sub(replacement, lowered)
    return lowered


def _stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if len(word) > len(suffix) + 3 and word.endswith(suffix) and not word.endswith("ss"):
            return word[: -len(suffix)]
    return word


def _cue(words: str) -> re.Pattern[str]:
    return re.compile(words)


_KIN = (
    r"(?:mother|mum|mom|father|dad|parents?|sister|brother|sibling|son|sons|daughter|"
    r"daughters|kids?|children|child|wife|husband|spouse|partner|girlfriend|boyfriend|"
    r"fianc[ée]e?|cousin|aunt|uncle|niece|nephew|grand(?:mother|father|ma|pa|parents?|son|"
    r"daughter|kids?)|[a-z]+-in-law|step(?:mother|father|son|daughter|mum|dad)|god(?:son|"
    r"daughter|mother|father)|twin|family)"
)
_SOCIAL = (
    r"(?:friend|friends|best friend|colleague|coworker|co-worker|boss|manager|mentor|mentee|"
    r"neighbou?r|landlord|landlady|flatmate|roommate|housemate|co-?founder|tutor|therapist|"
    r"doctor|gp|dentist|coach|teammate|ex|ex-\w+|buddy|team lead|lead|assistant|"
    r"accountability partner|dog-sitter|babysitter|nanny|client)"
)
_EMOTION = (
    r"(?:anxious|anxiety|nervous|worried|worry|worries|stressed|stress|stressful|overwhelmed|"
    r"scared|scares|afraid|terrified|frightened|fear|fears|panic|panicky|sad|sadness|unhappy|"
    r"depressed|lonely|loneliness|homesick|happy|happier|glad|joy|excited|thrilled|"
    r"proud|relieved|grateful|thankful|hopeful|hopeless|calm|peace|peaceful|angry|"
    r"anger|furious|annoyed|irritable|irritated|frustrated|frustrating|jealous|envious|"
    r"guilty|guilt|ashamed|shame|embarrassed|insecure|hurt|heartbroken|grieving|grief|"
    r"burnt out|burned out|burnout|exhausted|drained|restless|dread|dreading|mood|cry|cried|"
    r"crying|tears|upset|disappointed|miserable|uneasy|tense|motivated|unmotivated|"
    r"bitter|resentful|numb|elated|ecstatic|devastated|shaken|rattled|unappreciated|"
    r"appreciated|undervalued|valued|lonely|isolated|confident|vulnerable|scary|sick of|fed up)"
)
_DEMONYMS = (
    r"(?:british|english|scottish|welsh|irish|american|canadian|mexican|brazilian|argentinian|"
    r"chilean|french|german|dutch|belgian|swiss|italian|spanish|portuguese|polish|czech|"
    r"swedish|norwegian|danish|finnish|greek|turkish|russian|ukrainian|romanian|hungarian|"
    r"indian|pakistani|bangladeshi|chinese|japanese|korean|vietnamese|thai|filipino|"
    r"indonesian|australian|nigerian|kenyan|ghanaian|egyptian|moroccan|south african|"
    r"ethiopian|israeli|iranian|lebanese|catholic|christian|muslim|jewish|hindu|buddhist|"
    r"sikh|atheist|agnostic|introvert|extrovert|introverted|extroverted|left-handed|"
    r"right-handed|autistic|dyslexic|gay|lesbian|bisexual|straight|trans|transgender|"
    r"non-binary|nonbinary|queer|only child|eldest|youngest|middle child)"
)
_TECH = (
    r"(?:api|apis|database|databases|db|server|servers|service|services|repo|repository|"
    r"monorepo|branch|ci|cd|deploy|deploys|deployed|deployment|docker|container|kubernetes|"
    r"k8s|python|golang|rust|java|typescript|javascript|react|vue|node|postgres|postgresql|"
    r"mysql|sqlite|redis|kafka|aws|gcp|azure|s3|terraform|ansible|linux|fedora|ubuntu|debian|"
    r"macos|windows|git|github|gitlab|config|configuration|yaml|toml|json|port|version|ram|"
    r"ssd|gb|tb|cpu|gpu|ssh|vpn|http|https|url|endpoint|module|library|framework|package|"
    r"dependency|dependencies|build|builds|test suite|tests|linter|lint|mypy|compiler|schema|"
    r"migration|migrations|query|queries|index|cache|queue|cluster|pipeline|cron|logs|"
    r"logging|alert|alerts|backup|backups|encrypted|encryption|token|tokens|jwt|oauth|sdk|"
    r"cli|shell|zsh|bash|vim|neovim|emacs|ide|onnx|runtime|npm|pip|poetry|uv|bazel|hugo|"
    r"netlify|heroku|vercel|flask|django|fastapi|router|wi-fi|wifi|nas|usb|firmware|"
    r"rate limit|webhook|cdn|dns|domain|ssl|tls|certificate|load balancer|microservice|"
    r"staging|production|prod|frontend|backend|stack|codebase|code|commit|merge|pull request|"
    r"laptop|os|kernel|raspberry pi|home assistant|grafana|prometheus|loki|airflow|spark|"
    r"stripe|sentry|pagerduty|elasticsearch|tantivy|nginx|apache|ide|plugin|extension|"
    r"dotfiles|script|scripts|cron job|bug|bugs|latency|throughput|cpu|memory leak|"
    r"timeout|retries|binary|compiled|interpreter)"
)

CUES: Mapping[str, tuple[tuple[str, re.Pattern[str]], ...]] = {
    "identity": (
        ("name", _cue(r"\b(?:my name is|name is|call me|goes by|go by|known as)\b")),
        ("age", _cue(r"\b\d{1,3} years? old\b|\b(?:i am|is|turned|aged?) \d{2}\b")),
        ("origin", _cue(r"\bborn\b|\bgrew up\b|\bhome ?town\b|\bcome[s]? from\b|\bi am from\b")),
        ("language", _cue(r"\bnative (?:language|tongue|speaker)\b|\bspeak[s]? \w+\b")),
        ("papers", _cue(r"\bcitizen(?:ship)?\b|\bnationality\b|\bpassport\b|\bpronouns\b")),
        (
            "home",
            _cue(r"\b(?:i|we) (?:live|am based|have lived|moved)\b|\bbased in\b|\buser lives\b"),
        ),
        (
            "job",
            _cue(
                r"\bworks? as\b|\bby (?:trade|profession)\b|\bmy (?:job|profession|role)\b|"
                r"\b(?:i|we|user) (?:run|runs|own|owns|founded|co-founded) (?!(?:on|in)\b)"
            ),
        ),
        (
            "study",
            _cue(
                r"\bstudied\b|\bdegree\b|\bphd\b|\bgraduate[d]?\b|\bqualified\b|"
                r"\bcertified\b|\bretired\b|\btrained as\b|\bdiploma\b"
            ),
        ),
        ("i-am-a", _cue(r"\b(?:i am|is) (?:a|an) (?!(?:big |huge )?fan\b)[a-z-]+")),
        ("trait", _cue(rf"\b(?:i am|is|identif(?:y|ies) as|am an?|is an?) {_DEMONYMS}\b")),
        (
            "background",
            _cue(
                r"\b(?:eldest|oldest|youngest|middle) (?:of|child)\b|\bbackground\b|"
                r"\bidentif(?:y|ies)\b|\bdiagnosed\b|\bfamily of\b"
            ),
        ),
    ),
    "preference": (
        ("prefer", _cue(r"\bprefer(?:s|red|ence|ably)?\b|\brather\b|\bfavou?r(?:s|ite)?\b")),
        ("like", _cue(r"\b(?:like|likes|love|loves|enjoy|enjoys|adore|adores|fond of)\b")),
        (
            "dislike",
            _cue(
                r"\b(?:hate|hates|dislike[s]?|detest[s]?|loathe[s]?|can not stand|"
                r"not a fan|not keen)\b"
            ),
        ),
        ("fan", _cue(r"\bfan of\b|\bgo-to\b|\bbig fan\b|\bmy type\b|\btaste[s]?\b")),
        ("please", _cue(r"\bplease\b|\balways\b|\bwhen writing\b|\bfor me\b")),
        ("over", _cue(r"\b\w+ (?:over|instead of|rather than) \w+")),
    ),
    "relationship": (
        ("kin", _cue(rf"\b(?:my|user's|his|her|their|our|priya's|[a-z]+'s) (?:\w+ )?{_KIN}\b")),
        ("social", _cue(rf"\b(?:my|user's|his|her|their|our) (?:\w+ )?{_SOCIAL}\b")),
        ("is-my", _cue(rf"\b(?:is|are) (?:my|the user's|user's) (?:\w+ )?(?:{_KIN}|{_SOCIAL})\b")),
        (
            "bond",
            _cue(
                r"\bmarried\b|\bdating\b|\bengaged\b|\breports? to\b|\bfriends? with\b|"
                r"\bfriends since\b|\b(?:and i|and user) (?:have|are|share|co-own)\b|"
                r"\bco-own\b|\bshare[s]? a\b|\braised me\b|\bdivorce\w*\b|\bmentor\b|\bi coach\b|"
                rf"\b(?:i|we|he|she|user) ha(?:ve|s) (?:a |an |\w+ )?{_KIN}\b"
            ),
        ),
        ("kin-word", _cue(rf"\b{_KIN}\b")),
    ),
    "emotional": (
        ("feel", _cue(r"\bfe(?:el|els|eling|lt)\b")),
        ("emotion", _cue(rf"\b{_EMOTION}\b")),
        (
            "makes-me",
            _cue(
                rf"\b(?:makes?|made|gives?|gave) (?:me|her|him|them) (?:\w+ )?"
                rf"(?:{_EMOTION}|a knot)\b"
            ),
        ),
        ("state", _cue(r"\b(?:lately|these days|recently|honestly|since the|since i|today)\b")),
    ),
    "project-active": (
        (
            "working-on",
            _cue(
                r"\bworking on\b|\bworking through\b|\bin the (?:middle|process) "
                r"of\b|\bmid-?way\b|\bhalfway\b|\bhalf done\b|\bmain project\b|"
                r"\bcurrent (?:focus|project|contract)\b|\bmy focus\b|\bapplying for\b"
            ),
        ),
        (
            "now",
            _cue(
                r"\bcurrently\b|\bat the moment\b|\bright now\b|\bthese weeks\b|"
                r"\bthis (?:week|weekend|month|sprint|quarter|term|season)\b"
            ),
        ),
        (
            "doing",
            _cue(
                r"\b(?:i am|we are|is|are) (?:currently |now |still )?(?:building|"
                r"writing|preparing|organi[sz]ing|leading|running|drafting|migrating|"
                r"refactoring|renovating|rolling out|launching|setting up|prototyping|"
                r"coordinating|restoring|recording|knitting|packing|moving|clearing|"
                r"helping|designing|developing|shipping|testing|planning the|"
                r"co-authoring|translating|redesigning|fixing|reviewing)\b|"
                # A note without its subject: "Building eBay integration".
                r"^(?:currently |now |still )?(?:building|writing|preparing|organi[sz]ing|"
                r"leading|drafting|migrating|refactoring|renovating|rolling out|launching|"
                r"setting up|prototyping|developing|shipping|designing|redesigning)\b"
            ),
        ),
        ("progressive", _cue(r"\b(?:i am|we are|is|are) \w+ing\b")),
        (
            "due",
            _cue(
                r"\bdue\b|\bsubmission\b|\bkickoff\b|\bbeta\b|\blaunch\b|"
                r"\bnext (?:monday|tuesday|wednesday|thursday|friday|week)\b|"
                r"\bon (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b"
            ),
        ),
        ("started", _cue(r"\b(?:i|we) (?:have )?started\b|\bown the\b|\bon a contract\b")),
    ),
    "goal": (
        (
            "want",
            _cue(
                r"\b(?:want|wants|wanted) to\b|\bwould (?:like|love) to\b|"
                r"\b(?:hope|hopes|hoping) to\b"
            ),
        ),
        (
            "plan",
            _cue(
                r"\b(?:plan|plans|planning|intend|intends|aim|aims|aiming|determined) "
                r"(?:to|for)\b|\bworking towards?\b|^planning\b|\bplanning (?:a|an|my|our)\b"
            ),
        ),
        (
            "goal",
            _cue(
                r"\bgoal\b|\btarget\b|\bambition\b|\bdream\b|\bresolution\b|"
                r"\bobjective\b|\baspir\w*\b|\bbucket list\b"
            ),
        ),
        (
            "someday",
            _cue(
                r"\bsome ?day\b|\bone day\b|\beventually\b|\blong-term\b|"
                r"\bin the future\b|\bbefore i (?:turn|die|retire)\b|\bwithin \w+ "
                r"years?\b|\bthis year\b|\bnext year\b|\bby (?:the end of |summer|"
                r"spring|autumn|winter|december|\d{4})"
            ),
        ),
        (
            "become",
            _cue(
                r"\b(?:learn|become|get better at|be able to|improve|master|finish|"
                r"save|lose|reach|achieve)\b"
            ),
        ),
    ),
    "constraint": (
        (
            "health",
            _cue(
                r"\ballerg\w*|\bintoleran\w*|\bcoeliac|\bceliac|\bgluten\b|"
                r"\blactose\b|\bpregnan\w*|\bmedication\b|\bblood thinners?\b|"
                r"\bdoctor's orders\b|\bmigraines?\b|\bmotion sickness\b|"
                r"\bwheelchair\b|\bstep-free\b|\bdeaf\b|\bblind\b|\beyesight\b|"
                r"\bbad (?:knee|back|hip)\b|\bafter the operation\b|\binjur\w*\b"
            ),
        ),
        (
            "diet",
            _cue(
                r"\bvegan\b|\bvegetarian\b|\bkosher\b|\bhalal\b|\bpork\b|\bshellfish\b|"
                r"\bdo(?:es)? not (?:eat|drink)\b|\bcalorie\w*\b|\bdiet\b|\bcaffeine\b|"
                r"\bno (?:alcohol|meat|dairy|sugar|soft cheese|raw)\b"
            ),
        ),
        (
            "cannot",
            _cue(
                r"\bcan not\b|\bunable\b|\bnot (?:able|allowed|permitted)\b|"
                r"\bmust(?: not)?\b|\b(?:have|has|need|needs) to\b|\bforbid\w*\b"
            ),
        ),
        (
            "limit",
            _cue(
                r"\bonly (?:free|available|take|have|work|\d)|\bat most\b|\bno more "
                r"than\b|\bmaximum\b|\bup to\b|\bbudget\b|\blimit\w*\b|\bwithin\b|"
                r"\bavoid\w*\b|\bcan not go above\b|\bhas to fit\b|\bdeadline\b|"
                r"\bno later than\b"
            ),
        ),
        ("money", _cue(r"[£$€]\s?\d|\b\d+ (?:euros?|dollars?|pounds?)\b")),
        ("schedule", _cue(r"\bno (?:meetings|calls|work)\b|\b(?:before|after|between) \d")),
        (
            "rules",
            _cue(
                r"\bvisa\b|\bcontract\b|\breligious\b|\bprayer\b|\bschool run\b|"
                r"\bschool holidays\b|\bdogs?\b.*\ballow|\ballow\w*\b"
            ),
        ),
    ),
    "technical": (
        ("tech", _cue(rf"\b{_TECH}\b")),
        ("version", _cue(r"\b\d+\.\d+(?:\.\d+)*\b|\bv\d+\b|\b\d+ ?(?:gb|tb|mb|ms|ghz)\b")),
        (
            "built",
            _cue(
                r"\b(?:written|built|deployed|hosted|served|managed|formatted|"
                r"configured|stored|handled|managed|hosted) (?:in|with|on|by|at|through)\b|"
                r"\btargets\b|\bruns (?:on|in|nightly)\b|"
                r"\buses\b|\bis at\b|\blives in (?:the |a )?[a-z_]+[/.][a-z]"
            ),
        ),
        (
            "system",
            _cue(
                r"\bthe (?:\w+ )?(?:service|api|server|app|site|website|module|"
                r"repo|database|pipeline|index|model|printer|router|bot)\b"
            ),
        ),
    ),
}


def features(text: str) -> list[str]:
    """The features of one statement: ``w:`` words, ``s:`` stems, ``b:`` word pairs,
    ``k:`` cues (``k:category:name``) and ``f:`` surface marks (first person, third
    person, code-like tokens)."""
    clean = normalise(text)
    words = _WORD.findall(clean)
    found = [f"w:{word}" for word in words]
    for word in words:
        stem = _stem(word)
        if stem != word:
            found.append(f"s:{stem}")
    found += [f"b:{a} {b}" for a, b in zip(["<s>", *words], [*words, "</s>"], strict=True)]
    for category, cues in CUES.items():
        found += [f"k:{category}:{name}" for name, pattern in cues if pattern.search(clean)]
    first = {"i", "my", "me", "i'm", "mine", "we", "our"}
    if any(word in first for word in words):
        found.append("f:first-person")
    if re.search(r"[A-Za-z]\w*[/_.][A-Za-z]\w*|[a-z][A-Z]|[A-Z]{2,}[a-z]|\d+\.\d+", text):
        found.append("f:code-like")
    return found


# -- the model --------------------------------------------------------------------------------


class Model:
    """A linear model over ``features``: per feature a weight for each category."""

    def __init__(
        self,
        categories: Sequence[str],
        bias: Sequence[float],
        weights: Mapping[str, Sequence[float]],
    ) -> None:
        self.categories = tuple(categories)
        self.bias = tuple(bias)
        self.weights = dict(weights)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Model:
        return cls(data["categories"], data["bias"], data["weights"])

    def to_json(self) -> dict[str, Any]:
        return {
            "categories": list(self.categories),
            "bias": [round(b, 4) for b in self.bias],
            "weights": {k: [round(w, 4) for w in ws] for k, ws in sorted(self.weights.items())},
        }

    def probabilities(self, text: str) -> list[float]:
        """Each category's probability for ``text``, in ``categories`` order."""
        scores = list(self.bias)
        for feature in features(text):
            weights = self.weights.get(feature)
            if weights is not None:
                scores = [s + w for s, w in zip(scores, weights, strict=True)]
        top = max(scores)
        exps = [math.exp(s - top) for s in scores]
        total = sum(exps)
        return [e / total for e in exps]

    def decide(self, text: str) -> Decision:
        """The category of ``text``; personal categories beat ``technical`` when close."""
        probs = dict(zip(self.categories, self.probabilities(text), strict=True))
        ranked = sorted(probs, key=probs.__getitem__, reverse=True)
        if ranked[0] == "technical":
            personal = next(c for c in ranked if c in PERSONAL)
            if probs[personal] >= PERSONAL_MARGIN * probs["technical"]:
                ranked.remove(personal)
                ranked.insert(0, personal)
        return Decision(ranked[0], round(probs[ranked[0]], 4), ranked[1])


def train(
    texts: Sequence[str],
    labels: Sequence[str],
    *,
    l2: float = 0.1,
    cue_l2: float = 0.0003,
    steps: int = 200,
    min_count: int = 1,
) -> Model:
    """Fit a ``Model`` on labelled statements (full-batch gradient descent on the
    cross-entropy with L2). Cues are held back less than words (``cue_l2``): they are what
    carries over to statements whose words the examples never used."""
    import numpy as np

    counts: dict[str, int] = {}
    rows = [sorted(set(features(text))) for text in texts]
    for row in rows:
        for feature in row:
            counts[feature] = counts.get(feature, 0) + 1
    vocabulary = sorted(f for f, n in counts.items() if n >= min_count or f.startswith("k:"))
    column = {f: i for i, f in enumerate(vocabulary)}
    x = np.zeros((len(texts), len(vocabulary)), dtype=np.float64)
    for i, row in enumerate(rows):
        for feature in row:
            if feature in column:
                x[i, column[feature]] = 1.0
    index = {c: i for i, c in enumerate(CATEGORIES)}
    y = np.zeros((len(texts), len(CATEGORIES)))
    y[np.arange(len(texts)), [index[label] for label in labels]] = 1.0
    penalty = np.array([cue_l2 if f.startswith("k:") else l2 for f in vocabulary])[:, None]
    w = np.zeros((len(vocabulary), len(CATEGORIES)))
    b = np.zeros(len(CATEGORIES))
    # Adam: plain gradient descent needs many more steps on features this sparse.
    mw, vw, mb, vb = np.zeros_like(w), np.zeros_like(w), np.zeros_like(b), np.zeros_like(b)
    rate, beta1, beta2, eps = 0.05, 0.9, 0.999, 1e-8
    for step in range(1, steps + 1):
        scores = x @ w + b
        scores -= scores.max(axis=1, keepdims=True)
        probs = np.exp(scores)
        probs /= probs.sum(axis=1, keepdims=True)
        error = (probs - y) / len(texts)
        grad_w = x.T @ error + penalty * w
        grad_b = error.sum(axis=0)
        mw = beta1 * mw + (1 - beta1) * grad_w
        vw = beta2 * vw + (1 - beta2) * grad_w**2
        mb = beta1 * mb + (1 - beta1) * grad_b
        vb = beta2 * vb + (1 - beta2) * grad_b**2
        correction1, correction2 = 1 - beta1**step, 1 - beta2**step
        w -= rate * (mw / correction1) / (np.sqrt(vw / correction2) + eps)
        b -= rate * (mb / correction1) / (np.sqrt(vb / correction2) + eps)
    kept = {
        feature: [float(v) for v in w[i]]
        for feature, i in column.items()
        if np.abs(w[i]).max() >= 0.005
    }
    return Model(CATEGORIES, [float(v) for v in b], kept)


@cache
def builtin_model() -> Model:
    """The shipped model (read once)."""
    text = resources.files(__package__).joinpath("data", MODEL_FILE).read_text("utf-8")
    return Model.from_json(json.loads(text))


def model_path() -> Path:
    """Where the shipped model lives in a source checkout (what ``--train`` writes)."""
    return Path(__file__).parent / "data" / MODEL_FILE


# -- the classifier, with the optional external command -----------------------------------


class Classifier:
    """Classifies statements: through ``command`` when one is set and it answers well,
    otherwise with the built-in model. Each failure of the command is reported once per
    batch through ``warn``."""

    def __init__(
        self,
        command: str | None = None,
        *,
        timeout_s: float = 10.0,
        warn: Callable[[str], None] | None = None,
        model: Model | None = None,
    ) -> None:
        self.command = command
        self.timeout_s = timeout_s
        self.warn = warn or log.warning
        self._model = model

    @property
    def model(self) -> Model:
        return self._model or builtin_model()

    def classify(self, text: str) -> Decision:
        return self.classify_all([text])[0]

    def classify_all(self, texts: Sequence[str]) -> list[Decision]:
        """One decision per statement, in order."""
        built_in = [self.model.decide(text) for text in texts]
        if not self.command or not texts:
            return built_in
        try:
            answers = self._ask(texts)
        except CommandFailed as failure:
            self.warn(f"classifier_command failed ({failure}); used the built-in classifier")
            return built_in
        return [self._decision(text, answer) for text, answer in zip(texts, answers, strict=True)]

    def _decision(self, text: str, answer: Mapping[str, Any]) -> Decision:
        category = str(answer["category"])
        confidence = answer.get("confidence")
        if (
            isinstance(confidence, bool)
            or not isinstance(confidence, int | float)
            or not 0 <= confidence <= 1
        ):
            confidence = None
        probs = dict(zip(self.model.categories, self.model.probabilities(text), strict=True))
        if confidence is None:
            # The command named a category but not how sure it is: the built-in model's
            # probability of that category is the only honest figure at hand.
            confidence = probs[category]
        runner_up = max((c for c in probs if c != category), key=probs.__getitem__)
        return Decision(category, round(float(confidence), 4), runner_up)

    def _ask(self, texts: Sequence[str]) -> list[Mapping[str, Any]]:
        assert self.command
        batch = [{"text": text} for text in texts]
        return _answers(ask(self.command, batch, self.timeout_s), len(texts))


def _answers(answers: Any, expected: int) -> list[Mapping[str, Any]]:
    if not isinstance(answers, list) or not all(isinstance(a, dict) for a in answers):
        raise CommandFailed('output is not a JSON list of {"category": …} objects')
    if len(answers) != expected:
        raise CommandFailed(f"{len(answers)} answers for {expected} statements")
    for answer in answers:
        category = answer.get("category")
        if category not in CATEGORIES:
            raise CommandFailed(f"unknown category {category!r}")
    return answers


def read_labelled(lines: Iterable[str]) -> list[dict[str, str]]:
    """The records of a labelled JSONL file (``text``, ``category``, optional ``split``)."""
    return [json.loads(line) for line in lines if line.strip()]
