"""Generated evaluation sets beyond LoCoMo, in LoCoMo's JSON format (evidence dia_ids), seeded and deterministic.

A memory product is used on every kind of conversation; constants chosen on one kind do not carry over. Each set
here has a structure LoCoMo lacks:
- `assistant_facts`: a user tells a personal assistant facts between small talk, and later changes some of them
  (a move, a new job, a new pet, a trip moved). Questions ask the current value (single-hop, evidence the latest
  statement), the previous value (open-domain: the reader must know a later statement replaced it; evidence the
  earlier statement), when a change happened (temporal) and two facts from different sessions (multi-hop).
- `technical_long`: a user asks technical questions and the assistant answers at length (steps, code, config, up
  to ~14,000 characters); the answer to a later question sits anywhere in the reply, often past the first 256
  tokens an embedder reads. Questions paraphrase the detail rather than quote it.
- `locomo_filler`: LoCoMo conversations with small-talk exchanges inserted between the real ones (never inside
  an exchange, so the real pages stay as they were); evidence and questions unchanged.
Categories keep LoCoMo's numbers: 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from evaluation.smalltalk import small_talk

MULTI_HOP, TEMPORAL, OPEN_DOMAIN, SINGLE_HOP = 1, 2, 3, 4
ASSISTANT = "Assistant"
USER_NAMES = ["Maya", "Tom", "Priya", "Lukas", "Ines", "Kwame", "Sofia", "Daniel", "Aiko", "Rosa", "Omar", "Hanna"]


# --- a conversation being written ---------------------------------------------------------------------------------


@dataclass
class Transcript:
    """Sessions of (user, assistant) exchanges with their dates, and the questions about them."""

    user: str
    start: datetime
    sessions: list[list[tuple[str, str]]] = field(default_factory=list)
    dates: list[datetime] = field(default_factory=list)
    qa: list[dict] = field(default_factory=list)

    def new_session(self, gap_days: int) -> None:
        previous = self.dates[-1] if self.dates else self.start
        self.dates.append(previous + timedelta(days=gap_days, minutes=37 * len(self.dates)))
        self.sessions.append([])

    def say(self, user: str, reply: str) -> str:
        """Adds an exchange to the current session; returns the user's dia_id (the evidence of what they said)."""
        session = self.sessions[-1]
        session.append((user, reply))
        return f"D{len(self.sessions)}:{2 * len(session) - 1}"

    def reply_id(self, user_id: str) -> str:
        session, turn = user_id[1:].split(":")
        return f"D{session}:{int(turn) + 1}"

    def ask(self, question: str, answer: str, evidence: list[str], category: int, **validity: str) -> None:
        """A question; `validity` (about a fact that changed) names which value it asks for, "current" or
        "previous", and the other value, which a right answer must not give (evaluation/currency_eval.py)."""
        entry = {"question": question, "answer": answer, "evidence": evidence, "category": category}
        self.qa.append(entry | validity)

    def date_of(self, dia_id: str) -> str:
        return _day(self.dates[int(dia_id[1:].split(":")[0]) - 1])

    def sample(self, sample_id: str) -> dict:
        conversation: dict = {"speaker_a": self.user, "speaker_b": ASSISTANT}
        for number, (turns, date) in enumerate(zip(self.sessions, self.dates, strict=True), start=1):
            conversation[f"session_{number}_date_time"] = _stamp(date)
            conversation[f"session_{number}"] = [
                {"speaker": speaker, "dia_id": f"D{number}:{2 * i + offset}", "text": text}
                for i, (user, reply) in enumerate(turns)
                for offset, speaker, text in ((1, self.user, user), (2, ASSISTANT, reply))
            ]
        return {"sample_id": sample_id, "conversation": conversation, "qa": self.qa}


def _stamp(at: datetime) -> str:
    return at.strftime("%-I:%M %p on %-d %B, %Y").lower()


def _day(at: datetime) -> str:
    return f"{at.day} {at:%B %Y}"


# --- personal-assistant chats whose facts change ------------------------------------------------------------------


@dataclass(frozen=True)
class FactKind:
    """One thing a user can tell about themselves: how they say it, how they say it changed, how it is asked."""

    name: str
    values: tuple[str, ...]
    states: tuple[str, ...]
    changes: tuple[str, ...]  # empty: this fact never changes
    current: tuple[str, ...]
    previous: tuple[str, ...] = ()
    when: tuple[str, ...] = ()
    acks: tuple[str, ...] = ("That's great to hear!", "Thanks for telling me, I'll keep it in mind.")


FACT_KINDS = (
    FactKind(
        "home",
        ("Porto", "Leeds", "Denver", "Osaka", "Ghent", "Valencia", "Tucson", "Bergen", "Cork", "Lyon", "Adelaide"),
        (
            "I just signed the lease on a little flat in {v}, there are moving boxes everywhere.",
            "Our place in {v} is tiny but the light in the mornings is wonderful.",
            "Settling in nicely here in {v}, the tram stops right outside the door.",
        ),
        (
            "Big news: we packed everything up and relocated to {v}!",
            "Writing this from our new apartment in {v}, the move finally happened.",
            "Goodbye {old}, hello {v}. We got the keys on Friday.",
        ),
        ("Which city is {name} based in these days?", "Where is {name}'s home at the moment?"),
        ("Where was {name} living before the most recent move?", "Which city did {name} leave behind?"),
        ("When did {name} relocate to {v}?",),
        ("A new home, how exciting! I hope the neighbours are nice.", "Congratulations on the new place."),
    ),
    FactKind(
        "job",
        (
            "a nurse at St. Brigid's hospital",
            "a data analyst at Northwind Logistics",
            "a sous-chef at a bistro called Fennel",
            "a primary school teacher",
            "a structural engineer at Arcadis",
            "a paralegal at a small law firm",
            "a barista at Grindhouse Coffee",
            "a UX designer at a fintech startup",
        ),
        (
            "First week done as {v}. My feet hurt but I love it.",
            "I've been working as {v} for about a year now, it pays the bills.",
        ),
        (
            "I handed in my notice! Starting Monday I'll be {v}.",
            "New chapter: I accepted the offer and I'm now {v}.",
        ),
        ("What does {name} do for a living now?", "What is {name}'s current occupation?"),
        ("What was {name}'s previous job?",),
        ("When did {name} announce the career change to {v}?",),
        ("Congratulations! That's a big step.", "Wishing you the best with it."),
    ),
    FactKind(
        "pet",
        (
            "a beagle called Biscuit",
            "a grey cat named Pixel",
            "a rescue greyhound called Comet",
            "two guinea pigs, Salt and Pepper",
            "a parrot named Captain",
            "a tabby kitten called Mango",
        ),
        ("We adopted {v} from the shelter on Saturday!", "Meet the newest family member: {v}. Chaos ensues."),
        (
            "Our old companion passed away last month, it's been hard. This week we brought home {v}.",
            "After a sad few weeks the house felt empty, so we welcomed {v}.",
        ),
        ("What animal does {name} have at home now, and what is it called?",),
        ("Which animal did {name} have before the current one?",),
        ("When did {name} get {v}?",),
        ("Aww, give them a cuddle from me!", "Animals make a home, I'm sure it'll settle in quickly."),
    ),
    FactKind(
        "drink",
        ("flat white", "green tea", "matcha latte", "black coffee", "rooibos with honey", "oat cappuccino"),
        ("My mornings don't start until I've had a {v}.", "Every day begins with a {v} on the balcony for me."),
        ("Update on my mornings: I've given up the old habit and now have a {v} instead.",),
        ("What is {name}'s morning beverage these days?",),
        ("What did {name} use to have first thing in the morning?",),
        (),
        ("Sounds like a good ritual.", "Nothing beats a good start to the day."),
    ),
    FactKind(
        "car",
        ("a red Mazda 3", "a second-hand Volvo estate", "an electric Kia Niro", "a Toyota Yaris hybrid", "a VW camper"),
        ("I finally bought a car: {v}!", "We picked up {v} from the dealer today, it still smells new."),
        ("Sold the old one and we're driving {v} now.",),
        ("What vehicle does {name} own at present?",),
        ("Which vehicle did {name} sell?",),
        (),
        ("Safe travels in it!", "Enjoy the freedom of having wheels."),
    ),
    FactKind(
        "hobby",
        ("bouldering", "salsa dancing", "pottery", "trail running", "choir singing", "sourdough baking", "chess"),
        ("I signed up for a {v} class on Thursday evenings.", "Lately my free time goes into {v}, I'm obsessed."),
        ("I've dropped my old pastime and picked up {v} instead.",),
        ("What does {name} do in their spare time now?",),
        ("Which pastime did {name} give up?",),
        (),
        ("That sounds like fun.", "A great way to unwind."),
    ),
    FactKind(
        "sibling",
        ("Clara", "Jonas", "Mei", "Ravi", "Eleni", "Finn", "Zainab"),
        ("My younger sibling {v} is coming to stay with us for a few days.", "Had a long call with my brother {v}."),
        (),
        ("What is the name of {name}'s sibling?",),
        when=("When did {name} mention {v} visiting or calling?",),
    ),
    FactKind(
        "allergy",
        ("peanuts", "shellfish", "penicillin", "cats' dander", "pollen from birch trees", "sesame"),
        ("Note to self, and to you: I'm allergic to {v}.", "The doctor confirmed it, I react badly to {v}."),
        (),
        ("What is {name} allergic to?",),
    ),
)
TRIP_DESTINATIONS = ("Lisbon", "Kyoto", "Reykjavik", "Marrakesh", "Vancouver", "Tallinn", "Cape Town", "Hanoi")


def assistant_facts(*, seed: int = 1, conversations: int = 12) -> list[dict]:
    """Personal-assistant chats: facts between small talk, about a third of them changed later (module docstring)."""
    return [_assistant_chat(random.Random(f"facts:{seed}:{n}"), n) for n in range(conversations)]


def _assistant_chat(rng: random.Random, number: int) -> dict:
    name = USER_NAMES[number % len(USER_NAMES)]
    chat = Transcript(user=name, start=datetime(2024, 1, 8, 9, 0, tzinfo=UTC) + timedelta(days=rng.randint(0, 200)))
    sessions = 12
    kinds = rng.sample(FACT_KINDS, k=7)
    plan: dict[int, list] = {}
    for kind in kinds:
        first = rng.randint(0, sessions // 2)
        plan.setdefault(first, []).append(("state", kind))
        if kind.changes and rng.random() < 0.45:
            plan.setdefault(rng.randint(first + 2, sessions - 1), []).append(("change", kind))
    trip = _trip_plan(rng, sessions)
    for at, step in trip:
        plan.setdefault(at, []).append(step)
    said: dict[str, list[tuple[str, str]]] = {}
    for session in range(sessions):
        chat.new_session(gap_days=rng.randint(3, 12))
        events = plan.get(session, [])
        slots = sorted(rng.sample(range(rng.randint(7, 12) + len(events)), k=len(events)))
        for turn in range(max(slots, default=-1) + 1 + rng.randint(1, 4)):
            if turn in slots:
                _fact_turn(rng, chat, events[slots.index(turn)], said)
            else:
                chat.say(*small_talk(rng))
    _fact_questions(rng, chat, said, kinds)
    _trip_questions(rng, chat, said)
    _combined_questions(rng, chat, said)
    return chat.sample(f"facts-{number + 1}")


def _trip_plan(rng: random.Random, sessions: int) -> list[tuple[int, tuple]]:
    booked = rng.randint(1, sessions // 2)
    steps = [(booked, ("trip", None))]
    if rng.random() < 0.6:
        steps.append((rng.randint(booked + 2, sessions - 1), ("trip", "moved")))
    return steps


def _fact_turn(rng: random.Random, chat: Transcript, event: tuple, said: dict) -> None:
    what, kind = event
    if what == "trip":
        _trip_turn(rng, chat, moved=kind is not None, said=said)
        return
    history = said.setdefault(kind.name, [])
    old = history[-1][0] if history else ""
    value = rng.choice([v for v in kind.values if v != old])
    template = rng.choice(kind.states if what == "state" else kind.changes)
    dia_id = chat.say(template.format(v=value, old=old), rng.choice(kind.acks))
    history.append((value, dia_id))


def _trip_turn(rng: random.Random, chat: Transcript, *, moved: bool, said: dict) -> None:
    history = said.setdefault("trip", [])
    destination = history[0][0].split("|")[0] if history else rng.choice(TRIP_DESTINATIONS)
    departure = chat.dates[-1] + timedelta(days=rng.randint(20, 90))
    day = _day(departure)
    if moved:
        text = rng.choice(
            (
                f"Change of plans, the airline cancelled our flight so {destination} is now on {day}.",
                f"We had to push the {destination} holiday back, the new departure is {day}.",
            )
        )
    else:
        text = rng.choice(
            (
                f"Flights are booked! We leave for {destination} on {day}.",
                f"I finally committed: {destination}, departing {day}, for ten days.",
            )
        )
    dia_id = chat.say(text, rng.choice(("How exciting, I hope it's a great trip!", "Noted, that's coming up soon.")))
    history.append((f"{destination}|{day}", dia_id))


def _fact_questions(rng: random.Random, chat: Transcript, said: dict, kinds: list[FactKind]) -> None:
    for kind in kinds:
        history = said.get(kind.name, [])
        if not history:
            continue
        value, dia_id = history[-1]
        changed = {"validity": "current", "other_value": history[-2][0]} if len(history) > 1 else {}
        chat.ask(rng.choice(kind.current).format(name=chat.user), value, [dia_id], SINGLE_HOP, **changed)
        if len(history) > 1 and kind.previous:
            previous, previous_id = history[-2]
            question = rng.choice(kind.previous).format(name=chat.user)
            chat.ask(question, previous, [previous_id], OPEN_DOMAIN, validity="previous", other_value=value)
        if kind.when:
            question = rng.choice(kind.when).format(name=chat.user, v=value)
            chat.ask(question, chat.date_of(dia_id), [dia_id], TEMPORAL)


def _trip_questions(rng: random.Random, chat: Transcript, said: dict) -> None:
    history = said.get("trip", [])
    if not history:
        return
    destination, day = history[-1][0].split("|")
    question = rng.choice(("When does {name} fly out to {d}?", "What is the departure date of {name}'s {d} holiday?"))
    first_day = history[0][0].split("|")[1]
    changed = {"validity": "current", "other_value": first_day} if len(history) > 1 else {}
    chat.ask(question.format(name=chat.user, d=destination), day, [history[-1][1]], TEMPORAL, **changed)
    if len(history) > 1:
        question = f"Before the change of plans, when was {chat.user} supposed to leave for {destination}?"
        chat.ask(question, first_day, [history[0][1]], OPEN_DOMAIN, validity="previous", other_value=day)


PAIRS = (
    ("home", "job", "Where does {name} live now, and what is their job?"),
    ("home", "car", "Which city is {name} in, and what do they drive there?"),
    ("pet", "home", "What pet does {name} keep, and in which city do they live?"),
    ("job", "hobby", "What is {name}'s work and what do they do to relax?"),
    ("drink", "job", "What does {name} drink before heading to work, and what is that work?"),
    ("sibling", "home", "Who is {name}'s sibling, and where does {name} live now?"),
    ("allergy", "pet", "What is {name} allergic to, and which animal lives with them?"),
    ("car", "hobby", "What does {name} drive, and what is their current pastime?"),
)


def _combined_questions(rng: random.Random, chat: Transcript, said: dict) -> None:
    for first, second, template in rng.sample(PAIRS, k=len(PAIRS)):
        if first in said and second in said and said[first][-1][1] != said[second][-1][1]:
            answer = f"{said[first][-1][0]}; {said[second][-1][0]}"
            chat.ask(template.format(name=chat.user), answer, [said[first][-1][1], said[second][-1][1]], MULTI_HOP)


# --- technical conversations with long assistant answers ----------------------------------------------------------

TOPICS = (
    ("Redis replica", "caching"),
    ("nginx reverse proxy", "serving"),
    ("Celery worker pool", "background jobs"),
    ("Postgres standby", "replication"),
    ("Kubernetes readiness probe", "deployment"),
    ("GitHub Actions pipeline", "continuous integration"),
    ("Prometheus scrape job", "monitoring"),
    ("Kafka consumer group", "event streaming"),
    ("S3 lifecycle rule", "storage"),
    ("OAuth callback handler", "authentication"),
    ("Elasticsearch index template", "search"),
    ("Terraform state backend", "infrastructure"),
    ("gRPC health service", "service mesh"),
    ("webpack build", "frontend bundling"),
    ("pytest fixture for the database", "testing"),
    ("rate limiter middleware", "API protection"),
)
DETAILS = (
    (
        "port",
        lambda rng: str(rng.randint(6000, 9999)),
        (
            "Bind the {c} to port {v} so it cannot clash with anything already listening on the host.",
            "I'd move the {c} off the default and onto {v}; remember to open it in the firewall.",
        ),
        ("Which port number was recommended for the {c}?", "On what port should the {c} listen?"),
    ),
    (
        "timeout",
        lambda rng: str(rng.choice([15, 20, 30, 45, 60, 90, 120, 180])),
        (
            "Give the {c} a timeout of {v} seconds; anything shorter trips during a rolling deploy.",
            "A {v}-second timeout on the {c} is the sweet spot in my experience.",
        ),
        ("How long a time limit did the assistant advise for the {c}?", "What timeout suits the {c}?"),
    ),
    (
        "variable",
        lambda rng: (
            rng.choice(["APP", "SVC", "CORE", "EDGE"])
            + "_"
            + rng.choice(["CACHE_TTL", "MAX_CONN", "SHARD_KEY", "DRAIN_SECS", "BATCH_SIZE"])
        ),
        (
            "Read that setting from an environment variable named {v} rather than hard-coding it in the {c}.",
            "Expose the knob for the {c} as {v} in the environment so each stage can differ.",
        ),
        ("Which environment variable configures the {c}?", "What is the env setting for the {c} called?"),
    ),
    (
        "path",
        lambda rng: (
            "/etc/"
            + rng.choice(["orbit", "lantern", "quay", "ferry"])
            + "/"
            + rng.choice(["worker.toml", "edge.yaml", "probe.ini", "limits.conf"])
        ),
        (
            "Keep the {c} configuration in {v} and make it readable only by the service account.",
            "The {c} will look for its config at {v}, so mount the secret there.",
        ),
        ("Where should the configuration file of the {c} be placed?", "What file path holds the {c} settings?"),
    ),
    (
        "retries",
        lambda rng: str(rng.randint(2, 9)),
        (
            "Let the {c} retry at most {v} times with exponential backoff starting at 200 ms.",
            "Cap the {c}'s attempts at {v}; beyond that, alert instead of hammering the dependency.",
        ),
        ("How many attempts did the assistant allow for the {c}?", "What retry limit was proposed for the {c}?"),
    ),
    (
        "helper",
        lambda rng: (
            rng.choice(["ensure", "build", "load", "drain", "guard"])
            + "_"
            + rng.choice(["lease", "bucket", "window", "snapshot", "cursor"])
        ),
        (
            "Wrap the {c} logic in a small function called {v}() so the call sites stay readable.",
            "I'd factor that into {v}(), which the {c} can call on start-up.",
        ),
        ("What was the name of the function suggested for the {c}?", "Which helper did the {c} advice propose?"),
    ),
)
DETAILS += (
    (
        "version",
        lambda rng: f"{rng.randint(1, 9)}.{rng.randint(0, 20)}.{rng.randint(0, 9)}",
        (
            "Pin the client library of the {c} to version {v}; the release after it changed the API.",
            "Stay on {v} for the {c}'s dependency until the upstream regression is fixed.",
        ),
        ("Which release should the {c}'s library be pinned to?", "What version did the assistant pin for the {c}?"),
    ),
    (
        "memory",
        lambda rng: f"{rng.choice([256, 384, 512, 768, 1024, 1536, 2048])} MiB",
        (
            "Give each {c} process a hard memory limit of {v} and let the orchestrator restart it past that.",
            "In my experience {v} of memory per {c} instance leaves enough headroom.",
        ),
        ("How much RAM should each {c} instance get?", "What memory cap was advised for the {c}?"),
    ),
    (
        "concurrency",
        lambda rng: str(rng.choice([2, 3, 4, 6, 8, 12, 16, 24])),
        (
            "Run the {c} with a concurrency of {v}; more than that and the database becomes the bottleneck.",
            "I'd start the {c} with {v} parallel workers and scale out from there.",
        ),
        ("How many parallel workers was the {c} told to start with?", "What concurrency suits the {c}?"),
    ),
    (
        "schedule",
        lambda rng: rng.choice(
            ["every 5 minutes", "every 15 minutes", "hourly", "nightly at 02:30", "every 90 seconds"]
        ),
        (
            "Schedule the {c}'s clean-up job {v}; it is cheap and keeps the backlog small.",
            "A sweep of the {c} {v} is plenty, as long as it is idempotent.",
        ),
        ("How often should the {c}'s clean-up run?", "What schedule was proposed for the {c}'s sweep?"),
    ),
    (
        "queue",
        lambda rng: (
            rng.choice(["ingest", "billing", "thumbnails", "webhooks", "audit"])
            + "-"
            + rng.choice(["high", "bulk", "retry", "dlq", "slow"])
        ),
        (
            "Route the {c}'s slow tasks to a separate queue named {v} so they cannot starve the fast ones.",
            "Give the {c} its own queue, {v}, and monitor its depth.",
        ),
        ("What is the dedicated queue of the {c} called?", "Which queue name did the assistant suggest for the {c}?"),
    ),
    (
        "log",
        lambda rng: rng.choice(["WARNING", "INFO", "ERROR", "DEBUG"]),
        (
            "Run the {c} at log level {v} in production and raise it only while investigating.",
            "Set the {c}'s logger to {v}; the rest is noise at this volume.",
        ),
        ("At what log level should the {c} run in production?", "Which logging level was recommended for the {c}?"),
    ),
)
PARAGRAPHS = (
    "Before changing anything in production, reproduce the behaviour locally with the same versions; most surprises "
    "come from a difference between environments rather than from the code itself.",
    "Logging matters here. Emit one structured line per request with the identifiers you will search for later, "
    "and keep the noisy debug output behind a flag so it does not drown the useful signal.",
    "Think about failure first: what happens when the dependency is slow, when it is down, and when it answers with "
    "garbage. Each of those needs a different response, and only one of them should page someone at night.",
    "Write the smallest test that fails before the change and passes after it. It documents the intent better than "
    "a comment, and it stops the next refactor from quietly undoing the fix.",
    "Keep configuration out of the code. Values that differ between staging and production belong in the "
    "environment or a config file, with defaults that make the local setup work without ceremony.",
    "Measure before optimising. A profiler run on realistic data usually points somewhere unexpected, and a "
    "benchmark you can rerun tells you whether the change helped or just moved the cost around.",
    "Roll it out gradually: one instance first, watch the error rate and latency for a while, then the rest. A "
    "feature flag makes the rollback a setting rather than a redeploy.",
    "Document the decision in the repository, next to the code, with the numbers that justified it. Future you will "
    "not remember why the odd-looking setting is there.",
    "Security is part of the design, not an afterthought: least privilege for the service account, secrets from a "
    "vault or the platform's secret store, and no credentials in logs or error messages.",
    "Watch the resource limits. Memory that grows slowly over days is the classic sign of a leak or an unbounded "
    "cache, and it is far easier to catch with a dashboard than with a post-mortem.",
)
CODE_LINES = (
    "import logging",
    "logger = logging.getLogger(__name__)",
    "def handle(event, context):",
    "    payload = json.loads(event['body'])",
    "    if not payload.get('id'):",
    "        raise ValueError('missing id')",
    "    result = client.fetch(payload['id'], timeout=settings.TIMEOUT)",
    "    logger.info('fetched %s in %.1f ms', payload['id'], elapsed)",
    "    return {'statusCode': 200, 'body': json.dumps(result)}",
    "for attempt in range(settings.MAX_ATTEMPTS):",
    "    try:",
    "        return call()",
    "    except TransientError:",
    "        time.sleep(backoff * 2 ** attempt)",
    "services:",
    "  web:",
    "    image: registry.example/app:latest",
    "    healthcheck:",
    "      interval: 10s",
)
TECH_OPENERS = (
    "I'm setting up the {c} for our {t} and I'm not sure about the details. How would you do it?",
    "Could you walk me through configuring a {c}? It's for {t} in our new service.",
    "Our {t} keeps falling over. What's the right way to set up the {c}?",
    "Quick one about {t}: what does a sane {c} configuration look like?",
)
FOLLOW_UPS = (
    "Back to the {c}: it misbehaves under load now. What would you change?",
    "The {c} works, but the {t} side is still flaky in staging. Any further tuning?",
    "We're hardening the {c} before launch. What else should we set?",
)
REPLY_OPENERS = (
    "Here is how I would set up the {c}.",
    "Good question; there are a few moving parts.",
    "Let's go through it step by step.",
    "Under load, a few settings matter more than the rest.",
)
USER_FACTS = (
    ("Our team runs everything on {v}, for context.", ("AWS", "GCP", "Azure", "bare-metal servers", "Hetzner")),
    ("We have {v} engineers on the platform team.", ("three", "four", "seven", "eleven")),
    ("Our main language is {v}.", ("Go", "Python", "TypeScript", "Kotlin", "Rust")),
)


def technical_long(*, seed: int = 1, conversations: int = 8) -> list[dict]:
    """Technical chats with long assistant replies; questions ask for details inside them (module docstring)."""
    return [_technical_chat(random.Random(f"tech:{seed}:{n}"), n) for n in range(conversations)]


def _technical_chat(rng: random.Random, number: int) -> dict:
    """One project's long technical chat: four components, each discussed in twelve exchanges across eight
    sessions (set-up, then follow-ups), every answer long and about that component, with short exchanges between.
    Each answer holds one of the component's twelve details, so finding the component is not finding the detail:
    the answer's own text has to be read."""
    name = USER_NAMES[(number + 5) % len(USER_NAMES)]
    chat = Transcript(user=name, start=datetime(2025, 2, 3, 10, 0, tzinfo=UTC) + timedelta(days=rng.randint(0, 150)))
    topics = rng.sample(TOPICS, k=4)
    schedule = [(topic, part) for part in range(len(DETAILS)) for topic in rng.sample(topics, k=len(topics))]
    kinds = {topic[0]: rng.sample(DETAILS, k=len(DETAILS)) for topic in topics}
    asked: list[tuple] = []
    per_session = len(schedule) // 8
    for session in range(8):
        chat.new_session(gap_days=rng.randint(1, 9))
        for (component, theme), part in schedule[per_session * session : per_session * (session + 1)]:
            details = kinds[component][part : part + 1]
            asked.extend(_technical_exchange(rng, chat, component, theme, details, follow_up=part > 0))
            if rng.random() < 0.3:
                chat.say(*_thanks(rng, component))
        if rng.random() < 0.6:
            _user_fact(rng, chat)
    _technical_questions(rng, chat, asked)
    return chat.sample(f"tech-{number + 1}")


def _technical_exchange(
    rng: random.Random, chat: Transcript, component: str, theme: str, details: list, *, follow_up: bool
) -> list[tuple]:
    """One question and a long answer (about 1,000 to 14,000 characters) holding `details` anywhere in it;
    returns (component, question templates, value, the reply's dia_id) for each detail."""
    parts = [rng.choice(PARAGRAPHS) for _ in range(rng.randint(3, 45))]
    parts += [_code_block(rng) for _ in range(rng.randint(1, 4))]
    rng.shuffle(parts)
    placed = []
    for _, value_of, sentences, questions in details:
        value = value_of(rng)
        parts.insert(rng.randint(0, len(parts)), rng.choice(sentences).format(c=component, v=value))
        placed.append((value, questions))
    opener = rng.choice(FOLLOW_UPS if follow_up else TECH_OPENERS).format(c=component, t=theme)
    reply = rng.choice(REPLY_OPENERS).format(c=component) + "\n\n" + "\n\n".join(parts)
    reply_id = chat.reply_id(chat.say(opener, reply))
    return [(component, questions, value, reply_id) for value, questions in placed]


def _code_block(rng: random.Random) -> str:
    start = rng.randint(0, len(CODE_LINES) - 6)
    return "```\n" + "\n".join(CODE_LINES[start : start + rng.randint(5, 9)]) + "\n```"


def _thanks(rng: random.Random, component: str) -> tuple[str, str]:
    return (
        rng.choice(("Thanks, that helps a lot.", f"Makes sense. I'll try the {component} changes tomorrow.")),
        rng.choice(("Glad it helps. Shout if anything breaks.", "Good luck, and keep an eye on the logs.")),
    )


def _user_fact(rng: random.Random, chat: Transcript) -> None:
    template, values = rng.choice(USER_FACTS)
    chat.say(template.format(v=rng.choice(values)), "Good to know, I'll keep that in mind.")


def _technical_questions(rng: random.Random, chat: Transcript, asked: list[tuple]) -> None:
    single = []
    for component, questions, value, dia_id in asked:
        question = rng.choice(questions).format(c=component)
        chat.ask(question, value, [dia_id], SINGLE_HOP)
        single.append((question, value, dia_id))
    firsts = list({page: (question, value, page) for question, value, page in reversed(single)}.values())[::-1]
    pairs = list(zip(firsts[::2], firsts[1::2], strict=False))
    for (first, value, page), (second, other, other_page) in rng.sample(pairs, k=min(7, len(pairs))):
        question = f"{first[:-1]}, and {second[0].lower()}{second[1:]}"
        chat.ask(question, f"{value}; {other}", [page, other_page], MULTI_HOP)
    pages: dict[str, list[str]] = {}
    for component, _, _, dia_id in asked:
        if dia_id not in pages.setdefault(component, []):
            pages[component].append(dia_id)
    for component in rng.sample(sorted(pages), k=min(4, len(pages))):
        first, *later = pages[component]
        chat.ask(f"When did {chat.user} first ask about the {component}?", chat.date_of(first), [first], TEMPORAL)
        if later:
            question = f"When did {chat.user} come back to the {component} with a follow-up?"
            chat.ask(question, chat.date_of(later[0]), [later[0]], TEMPORAL)


# --- LoCoMo with small talk between the real exchanges ------------------------------------------------------------


def locomo_filler(samples: list[dict], *, seed: int = 1, share: float = 0.5) -> list[dict]:
    """Each LoCoMo conversation with small-talk exchanges between its real ones: after an assistant-side utterance
    that a user-side one follows, with probability `share`, one exchange (dia_ids "F<session>:<n>", which no
    evidence names). The real utterances, their dia_ids, dates and the questions are unchanged."""
    rng = random.Random(f"filler:{seed}")
    return [_with_filler(rng, sample, share) for sample in samples]


def _with_filler(rng: random.Random, sample: dict, share: float) -> dict:
    conversation = dict(sample["conversation"])
    user, assistant = conversation["speaker_a"], conversation["speaker_b"]
    for key, turns in sample["conversation"].items():
        if not (key.startswith("session_") and isinstance(turns, list)):
            continue
        session, padded, count = key.split("_")[1], [], 0
        for turn, following in zip(turns, [*turns[1:], None], strict=True):
            padded.append(turn)
            at_boundary = following is not None and turn["speaker"] == assistant and following["speaker"] == user
            if at_boundary and rng.random() < share:
                said, reply = small_talk(rng)
                padded.append({"speaker": user, "dia_id": f"F{session}:{count + 1}", "text": said})
                padded.append({"speaker": assistant, "dia_id": f"F{session}:{count + 2}", "text": reply})
                count += 2
        conversation[key] = padded
    return {**sample, "sample_id": f"{sample['sample_id']}-filler", "conversation": conversation}
