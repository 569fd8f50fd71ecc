"""The demo tenant's people and the conversations `demo_seed` records for them."""

from __future__ import annotations

from dataclasses import dataclass

from memory.models import Role

TENANT_SLUG = "demo"
TENANT_NAME = "Demo Co."
ASSISTANT_ID = "ava"
ASSISTANT_NAME = "Ava"
ASSISTANT_PERSONA = (
    "Ava is the friendly assistant of Demo Co. She is warm and concise, remembers what people tell her and "
    "refers back to it naturally, asks one question at a time, and says so plainly when she does not know."
)
OPERATORS: list[tuple[str, Role]] = [
    ("admin", Role.ADMIN),
    ("supervisor", Role.SUPERVISOR),
    ("agent", Role.AGENT),
    ("dpo", Role.DPO),
]


@dataclass(frozen=True)
class Topic:
    """A stretch of conversation on one subject, `days_ago` before the seed ran."""

    days_ago: float
    turns: list[tuple[str, str]]


@dataclass(frozen=True)
class DemoUser:
    external_id: str
    display_name: str
    email: str
    topics: list[Topic]


ALICE = DemoUser(
    external_id="alice",
    display_name="Alice Martin",
    email="alice@example.com",
    topics=[
        Topic(
            days_ago=6,
            turns=[
                (
                    "Hi Ava! I'm finally taking a holiday: five days in Lisbon at the end of May.",
                    "Lovely, Lisbon in late May is warm but not yet crowded. Is it your first time there?",
                ),
                (
                    "Yes, first time. I'm travelling alone and I'd like to walk everywhere rather than take taxis.",
                    "Lisbon is very walkable, just hilly. Alfama, Baixa and Chiado are close together; comfortable "
                    "shoes matter more than anything. The 28 tram helps on the steepest bits.",
                ),
                (
                    "I'm vegetarian, will I struggle to eat well?",
                    "Not at all. Traditional menus lean on fish and pork, but Lisbon has plenty of vegetarian "
                    "places, and the markets are full of cheese, bread and fruit. Try the Time Out Market for choice.",
                ),
                (
                    "And is a day trip to Sintra worth it?",
                    "Yes. Take an early train from Rossio (about 40 minutes) and book the Pena Palace ticket "
                    "ahead; the queues grow fast after ten.",
                ),
                (
                    "Great, I'll book Pena for the Wednesday then.",
                    "Good plan. Wednesday is usually quieter than the weekend. Enjoy it!",
                ),
            ],
        ),
        Topic(
            days_ago=3,
            turns=[
                (
                    "Different topic: my sourdough keeps coming out dense and flat. Any idea why?",
                    "Usually the starter is weak or the bulk ferment is too short. How long after feeding does your "
                    "starter double?",
                ),
                (
                    "About ten hours. My kitchen is cold, around 18 degrees.",
                    "That's slow, and the cold is the likely cause. Keep the starter somewhere near 24 degrees, "
                    "like the oven with only the light on, and use it at its peak.",
                ),
                (
                    "I use 75% hydration with strong white flour.",
                    "That's a sensible hydration. In a cool kitchen let the bulk ferment go until the dough has "
                    "grown by about half, which may take six or seven hours rather than four.",
                ),
                (
                    "OK, I'll try the oven-light trick this weekend and report back.",
                    "Please do. Look for a domed, jiggly dough with bubbles at the sides before you shape it.",
                ),
            ],
        ),
        Topic(
            days_ago=0.2,
            turns=[
                (
                    "The bread worked! Now something else: I signed up for a half marathon in October.",
                    "Congratulations on both! How much are you running at the moment?",
                ),
                (
                    "About 15 km a week, three short runs. My longest run is 8 km.",
                    "That's a solid base. A 16-week plan that adds one long run a week, growing by 1 to 2 km, "
                    "gets you to 18 km comfortably before the race.",
                ),
                (
                    "My left knee sometimes aches after long runs, should I worry?",
                    "Ease off if it hurts during a run, and add two short strength sessions a week for hips and "
                    "legs. If the ache lasts more than a few days, see a physiotherapist; I can't diagnose it.",
                ),
            ],
        ),
    ],
)

BOB = DemoUser(
    external_id="bob",
    display_name="Bob Okafor",
    email="bob@example.com",
    topics=[
        Topic(
            days_ago=5,
            turns=[
                (
                    "Hello. I've got a small back garden and want to grow vegetables for the first time.",
                    "A great project. How much sun does the garden get, and roughly how big is it?",
                ),
                (
                    "It faces south, about 4 by 6 metres, but the soil is heavy clay.",
                    "South-facing is ideal. For clay, raised beds filled with compost and topsoil save a lot of "
                    "digging and drain better in spring.",
                ),
                (
                    "What should a beginner plant first?",
                    "Easy winners: courgettes, runner beans, salad leaves, radishes and potatoes in bags. Tomatoes "
                    "too, if you don't mind tying them in.",
                ),
                (
                    "My dog Biscuit digs up everything, though.",
                    "Then give the beds a low fence or netting, and maybe a sandpit corner for Biscuit to dig in "
                    "instead; dogs often take to a spot of their own.",
                ),
                (
                    "Ha, a sandpit for Biscuit. I'll build two raised beds this weekend.",
                    "Sounds like a plan. Line the bottoms with cardboard to smother the grass underneath.",
                ),
            ],
        ),
        Topic(
            days_ago=2,
            turns=[
                (
                    "Work question: I'm learning Python to analyse our sales spreadsheets. Where do I start?",
                    "pandas is the tool for that. Start with read_excel to load a sheet, then head() and describe() "
                    "to get a feel for the data. Which version of Python do you have?",
                ),
                (
                    "Python 3.11 on a Windows laptop. The sheets have one row per order.",
                    "Good. Then groupby is your friend, for example sales grouped by month and region, summing the "
                    "order totals.",
                ),
                (
                    "The dates come in as text like 03/04/2024 and I'm not sure if that's March or April.",
                    "Pass dayfirst=True to pd.to_datetime if they're UK-style dates, then check a few rows you know. "
                    "Never guess with dates.",
                ),
                (
                    "Thanks, I'll try a monthly summary for my manager on Friday.",
                    "A chart helps too: df.plot(kind='bar') on the monthly totals is a quick win.",
                ),
            ],
        ),
        Topic(
            days_ago=0.3,
            turns=[
                (
                    "My daughter Maya turns seven next month and wants a dinosaur party.",
                    "Fun! How many children are you expecting, and will it be at home or somewhere else?",
                ),
                (
                    "About twelve kids, at home, in the garden if the weather holds.",
                    "A dinosaur dig would suit the garden: bury plastic dinosaurs in a sandpit or a tray of sand "
                    "and give each child a brush. Have an indoor plan in case of rain.",
                ),
                (
                    "Perfect, we can use Biscuit's sandpit! Maya also can't eat nuts.",
                    "Good thing to plan for. Choose a nut-free bakery for the cake, check every snack label, and "
                    "tell the other parents so nothing with nuts arrives in party bags.",
                ),
            ],
        ),
    ],
)

END_USERS = [ALICE, BOB]


def demo_logins(password: str) -> str:
    """The demo's logins, as `demo_seed` and `serve` print them."""
    operators = ", ".join(f"{username} ({role.label.lower()})" for username, role in OPERATORS)
    end_users = ", ".join(person.external_id for person in END_USERS)
    return f"Demo logins, all with the password {password}:\n  operators  {operators}\n  end users  {end_users}\n"
