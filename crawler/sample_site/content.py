"""Prose of the sample site: a fictional town newspaper, The Wrenfield Courier.

Every word below was written for this project (see README.md: CC0 1.0).
Wrenfield, the Tamsel River and everyone named here are invented.

Paragraph and heading strings are HTML fragments: they may hold <strong>,
<b> and <em>, and must escape ``&`` as ``&amp;``. ``build.py`` turns this
module into the static files under ``pages/`` and into ``expected.json``.
"""

SITE_NAME = "The Wrenfield Courier"
SITE_TAGLINE = "News from the Tamsel valley since 1871"

# slug -> article. "section" is a key of SECTIONS.
ARTICLES = {
    "library-roof": {
        "section": "town-hall",
        "headline": "Council votes to fund Wrenfield library roof before winter",
        "dek": (
            "After three years of buckets and tarpaulins, the reading room will "
            "get a new slate roof paid for from the town's reserve fund."
        ),
        "keywords": "Wrenfield, library, council, budget, roof repair, reserve fund",
        "author": "Maren Oakes",
        "date": ("2024-03-05", "5 March 2024"),
        "body": [
            ("p", (
                "The Wrenfield town council voted six to one on Tuesday night to pay "
                "for a full replacement of the public library roof, ending a dispute "
                "that has dragged through three budget cycles. The work will cost "
                "<strong>$412,000</strong> and will be drawn from the capital reserve "
                "fund rather than from a new borrowing package. Councillors heard that "
                "the slate covering the 1911 reading room has slipped in at least forty "
                "places since the storms of last February. Library staff now set out "
                "eleven buckets whenever rain is forecast, and part of the local history "
                "collection has been moved into the basement for safekeeping. Head "
                "librarian Ruth Abernethy told the meeting that the building had been "
                "\u201cpatched with goodwill for long enough.\u201d The only vote against "
                "came from councillor Hollis Frame, who argued that the reserve should be "
                "kept for the ageing water main under Quarry Lane."
            )),
            ("h2", "A roof older than most of the town"),
            ("p", (
                "Contractors who inspected the building in January found that many of the "
                "original copper nails had corroded to the thickness of a pencil lead. "
                "Once a nail fails, the slate it holds slides down and lets water reach "
                "the timber boards beneath. Several of those boards are now soft enough "
                "to push a thumb into, according to the surveyor's report. The plan "
                "approved on Tuesday strips the whole roof back to the rafters, replaces "
                "damaged timber, and lays new slate on stainless steel fixings. "
                "Scaffolding is expected to go up in late April, and the library will "
                "stay open throughout, with the upstairs reading room closed for about "
                "ten weeks. The council's buildings officer said the job should carry a "
                "warranty of at least sixty years."
            )),
            ("p", (
                "Residents who spoke during the public comment period were almost "
                "unanimous in their support. A retired teacher described bringing three "
                "generations of her family to the children's corner on Saturday mornings. "
                "A local historian pointed out that the library holds the only complete "
                "run of parish records from before the mill fire of 1887. Two students "
                "from Wrenfield High said the building is one of the few quiet places in "
                "town with free wifi and long opening hours. Not every speaker was "
                "satisfied, however. One resident asked why the repair had been postponed "
                "for so long when the damage was visible from the street, and was "
                "applauded from the public gallery."
            )),
            ("p", (
                "Mayor Ilse Varga said the delay had been caused by two failed grant "
                "applications and by uncertainty over the insurance claim from last "
                "year's storms. She acknowledged that the council \u201cshould have acted "
                "a winter sooner\u201d and promised a written timetable for the works "
                "before the end of the month. The <b>Friends of Wrenfield Library</b>, "
                "who raised nearly nine thousand dollars through book sales toward the "
                "survey costs, will be invited to a site tour once the scaffolding is up. "
                "Abernethy said the collection would be checked for damp before anything "
                "was returned to the upper floor. For now, the buckets stay where they are."
            )),
        ],
    },
    "sourdough-prize": {
        "section": "business",
        "headline": "Harbour Street bakery takes top prize at valley bread fair",
        "dek": (
            "A rye sourdough built on a twelve-year-old starter earned Crumb &amp; "
            "Kiln the gold ribbon, and its owners are already worried about the queue."
        ),
        "keywords": "bakery, sourdough, rye bread, Tamsel Valley Bread Fair, Harbour Street",
        "author": "Tobias Greer",
        "date": ("2024-05-14", "14 May 2024"),
        "body": [
            ("p", (
                "A small bakery on Harbour Street has won the gold ribbon at the Tamsel "
                "Valley Bread Fair, beating forty-three entries from across the region. "
                "<strong>Crumb &amp; Kiln</strong>, which opened in a former bicycle repair "
                "shop four years ago, entered a dark rye sourdough flavoured with toasted "
                "caraway and a spoonful of blackstrap molasses. The judges praised the "
                "loaf's \u201cglossy, crackling crust\u201d and an open crumb that held its "
                "shape when sliced thin. Owners Nadia and Joel Fenwick bake every loaf "
                "themselves in a wood-fired oven that Joel assembled from reclaimed "
                "firebricks. They begin mixing dough at three in the morning and usually "
                "sell out by eleven. Nadia said they had entered the fair mostly so that "
                "their apprentice could see how other bakers work."
            )),
            ("h2", "Twelve years of feeding a starter"),
            ("p", (
                "The starter behind the winning loaf is older than the bakery itself. "
                "Nadia began it in a jam jar in her student flat and has fed it flour and "
                "water nearly every day since, including on a camping holiday when it "
                "travelled in a cool box. She describes its smell as \u201cgreen apples "
                "with a bit of vinegar on a bad day.\u201d A starter is a living culture "
                "of wild yeasts and lactic bacteria, and its character shifts with "
                "temperature, flour and even the water supply. The couple use stone-milled "
                "rye from a farm about twenty kilometres upstream, which they say gives "
                "the bread its deep, slightly sour flavour. Joel admits the wood oven is "
                "stubborn and that roughly one batch in twenty comes out too dark to sell. "
                "Those loaves are sliced for free samples or given to the food bank at "
                "St Aldhelm's."
            )),
            ("p", (
                "The prize has already changed the rhythm of the shop. On Saturday morning "
                "the queue stretched past the hardware store, and the rye was gone before "
                "nine. The Fenwicks do not plan to expand production, saying the oven and "
                "their own sleep both have limits. Instead they will take pre-orders for "
                "the rye on Wednesdays and Fridays through a paper list beside the till. "
                "Their apprentice, nineteen-year-old Kit Lowry, will lead a beginners' "
                "bread class at the community centre next month. \u201cPeople assume "
                "there's a secret,\u201d Joel said. \u201cThe secret is getting up early "
                "and paying attention.\u201d"
            )),
        ],
    },
    "river-cleanup": {
        "section": "outdoors",
        "headline": "Volunteers haul two tonnes of rubbish from the Tamsel",
        "dek": (
            "Shopping trolleys, a bathtub and more than six hundred bottles were pulled "
            "from the river during the annual spring clean-up."
        ),
        "keywords": "Tamsel River, clean-up, volunteers, litter, otters, kingfishers",
        "author": "Priya Danvers",
        "date": ("2024-04-08", "8 April 2024"),
        "body": [
            ("p", (
                "More than a hundred and twenty volunteers waded, paddled and scrambled "
                "along the banks of the Tamsel River on Sunday for the annual spring "
                "clean-up, collecting just over <strong>two tonnes</strong> of rubbish in "
                "six hours. Organised by the Friends of the Tamsel, the event covered the "
                "stretch between the weir at Colley's Mill and the footbridge below "
                "Ashcombe Park. Volunteers were given gloves, litter pickers and bright "
                "orange bags, and a team of four kayakers worked the deeper water near the "
                "railway arches. Among the more unusual finds were a cast-iron bathtub, "
                "three shopping trolleys, a parking meter and a rocking horse missing its "
                "head. The most common item, by a wide margin, was the plastic drinks "
                "bottle: the tally sheet recorded six hundred and twelve of them. "
                "Coordinator Amina Lanham said the total was slightly lower than last "
                "year's, which she took as a hopeful sign."
            )),
            ("h2", "What the river gives back"),
            ("p", (
                "Clean-up days double as a rough survey of the river's health. Volunteers "
                "noted the location of every outfall pipe they passed, along with any "
                "unusual smell, colour or foam on the surface. That information goes to "
                "the regional environment agency, which has used past reports to trace "
                "two illegal discharges from an industrial estate upstream. This year, "
                "volunteers also counted wildlife for the first time. They recorded a pair "
                "of kingfishers near the old tannery, at least a dozen sand martin burrows "
                "in the eroded bank below the cricket ground, and the unmistakable slide "
                "marks of an otter on a muddy beach near the sewage works. Lanham said "
                "otters had been absent from this stretch for decades, and that any sign "
                "of them was \u201cworth more than a skip full of trolleys.\u201d"
            )),
            ("p", (
                "The heavy items were lifted out with a winch lent by the fire brigade, "
                "whose crew used the morning as a training exercise in swift-water rescue. "
                "Recyclable material was sorted on tarpaulins in the car park of the "
                "Ferryman's Rest, which also provided soup and tea for the volunteers. "
                "Metal went to a scrap merchant in Dunmore, and the proceeds will buy new "
                "waders for next year. Lanham asked residents to report dumped items "
                "through the council's online form rather than waiting for the annual "
                "event. \u201cWe would be delighted,\u201d she said, \u201cto have nothing "
                "left to find.\u201d"
            )),
        ],
    },
    "robotics-team": {
        "section": "schools",
        "headline": "Wrenfield Middle School robot rolls into national finals",
        "dek": (
            "Eight students and one very patient science teacher built a machine "
            "that sorts coloured blocks faster than most of the adults who tried it."
        ),
        "keywords": "robotics, Junior Engineering Challenge, Wrenfield Middle School, students, Python",
        "author": "Ada Winslow",
        "date": ("2024-03-19", "19 March 2024"),
        "body": [
            ("p", (
                "A robot built from salvaged printer parts, a secondhand camera and "
                "roughly four hundred lines of Python has carried eight students from "
                "Wrenfield Middle School into the national finals of the <strong>Junior "
                "Engineering Challenge</strong>. The team, which calls itself the "
                "Gearhounds, placed second of thirty-one schools at the regional round in "
                "Castlebury last weekend. This year's challenge asked teams to design a "
                "machine that could sort a mixed pile of coloured blocks into bins within "
                "three minutes. The Gearhounds' robot uses a camera to identify each block "
                "and a rotating arm to sweep it down the correct chute. In its best run, "
                "it sorted all forty blocks with two seconds to spare. Judges singled out "
                "the team's engineering notebook, which recorded every failed design in "
                "careful detail."
            )),
            ("h2", "Learning from the jams"),
            ("p", (
                "Science teacher Olu Adebayo, who coaches the club after school on "
                "Tuesdays and Thursdays, said the notebook was the students' own idea. "
                "Early prototypes jammed constantly, and the team began writing down the "
                "cause of each jam so they would stop repeating the same mistakes. "
                "Thirteen-year-old Hana Sato, the team's lead programmer, said the hardest "
                "problem was lighting. The gym where the regional round was held had "
                "yellow lamps that made orange blocks look red, so the team recalibrated "
                "the camera between heats using a sheet of white paper. Another member, "
                "Felix Orme, cut a new gear from a block of nylon in the school workshop "
                "when the original stripped during practice. Adebayo said watching the "
                "students solve problems under pressure was \u201cbetter than any lesson "
                "plan I have ever written.\u201d"
            )),
            ("p", (
                "The national finals take place in June, and the team needs to raise "
                "about two thousand five hundred dollars to cover travel, accommodation "
                "and spare parts. Parents have organised a car wash and a quiz night, and "
                "an electronics shop on Market Row has offered to donate a replacement "
                "motor controller. The students are also planning upgrades. They want the "
                "robot to recognise blocks by shape as well as colour, which means "
                "collecting hundreds of new training photographs. Principal Agnes Whitlow "
                "said the school was proud of the team and would cover part of the entry "
                "fee from its activities budget. Anyone wishing to support the Gearhounds "
                "can contact the school office."
            )),
        ],
    },
    "orchard-frost": {
        "section": "business",
        "headline": "Late frost damages blossom in Wrenfield orchards",
        "dek": (
            "Growers on the south slopes lost much of their early apple blossom in a "
            "single cold night, and some expect a thin harvest."
        ),
        "keywords": "orchards, frost, apple blossom, growers, harvest, cider",
        "author": "Tobias Greer",
        "date": ("2024-04-22", "22 April 2024"),
        "body": [
            ("p", (
                "A hard frost on the night of April nineteenth has damaged apple blossom "
                "across the orchards on Wrenfield's south slopes, and several growers say "
                "they expect a much smaller harvest this autumn. Temperatures at the "
                "Hallett farm weather station fell to minus three degrees shortly before "
                "dawn, cold enough to kill the delicate centre of an open flower. Blossom "
                "that looks healthy from a distance can turn out to be brown inside when "
                "the petals are pulled back. Early varieties such as Discovery were in "
                "full bloom and suffered the worst. Later varieties, including the "
                "Bramleys that supply the town's cider press, were still in tight bud and "
                "may have escaped. Growers spent the weekend walking their rows and "
                "cutting open flowers to estimate the losses."
            )),
            ("h2", "Sprinklers and smudge pots"),
            ("p", (
                "Some farms tried to protect their trees overnight. At Hallett Orchard, "
                "owner Grace Hallett ran overhead sprinklers from midnight until the sun "
                "was well up, coating the blossom in a thin layer of ice. As water freezes "
                "it releases a little heat, which can keep the flower just above the "
                "killing temperature. The method works, but it uses a great deal of water "
                "and must continue until the ice melts on its own. Hallett estimated that "
                "she saved perhaps half of the blossom on the <b>forty acres</b> she was "
                "able to cover. Her neighbour, Simon Achterberg, lit paraffin heaters "
                "between the rows, an old technique that local farmers still call smudge "
                "pots. He said the heaters helped in the lowest part of his orchard, where "
                "cold air collects, but could not keep up on the exposed upper terraces."
            )),
            ("p", (
                "The timing is especially hard for the smaller growers, who sell most of "
                "their fruit at the farmers' market and at roadside stalls. A poor crop "
                "means fewer pick-your-own weekends, which bring visitors and income to "
                "the whole valley in September. The regional farmers' union has asked "
                "growers to record their losses with photographs and dated notes, in case "
                "an emergency support scheme is announced. Fruit specialists caution that "
                "it is too early to give a final figure. Trees often set more fruit than "
                "they can carry, and a partial loss of blossom can sometimes be absorbed "
                "without a large drop in yield."
            )),
            ("p", (
                "Hallett said she was trying to stay optimistic. \u201cWe've had bad "
                "springs before and still filled the cold store,\u201d she said. "
                "\u201cWe'll know in six weeks, when the fruitlets start to swell.\u201d "
                "The cider press on Mill Lane has said it will buy apples from as many "
                "local growers as possible this year, even if the fruit is blemished."
            )),
        ],
    },
    "ferry-timetable": {
        "section": "town-hall",
        "headline": "Tamsel ferry to cut winter crossings from November",
        "dek": (
            "The operator says falling passenger numbers leave it no choice, but "
            "commuters on the east bank fear being stranded after dark."
        ),
        "keywords": "ferry, timetable, East Tamsel, public transport, petition, commuters",
        "author": "Maren Oakes",
        "date": ("2024-09-09", "9 September 2024"),
        "body": [
            ("p", (
                "The foot ferry that links Wrenfield with the village of East Tamsel will "
                "run fewer crossings this winter, its operator confirmed on Monday. From "
                "the first week of November, the last boat from the town quay will leave "
                "at <strong>6.40 in the evening</strong> instead of 9.15, and there will "
                "be no Sunday service until March. The Tamsel Ferry Company says passenger "
                "numbers after dark have fallen by almost a third since the new road "
                "bridge opened upstream. Running the boat costs roughly the same whether "
                "it carries two passengers or forty, and the company says the late "
                "crossings have been losing money for two winters in a row. A spokesperson "
                "described the change as \u201cpainful but necessary\u201d and said the "
                "summer timetable would not be affected. The ferry has operated in some "
                "form since at least 1790, when it was a rowing boat hauled along a rope."
            )),
            ("h2", "Commuters on the east bank"),
            ("p", (
                "For residents of East Tamsel, the new timetable is more than an "
                "inconvenience. The village has no shop, no pharmacy and only one bus a "
                "day, so many people rely on the ferry to reach work, school and the "
                "health centre in Wrenfield. Shift workers at the hospital laundry say "
                "they finish too late to catch the new final crossing. The drive around "
                "by the road bridge takes about thirty-five minutes, and not everyone owns "
                "a car. Parish councillor Jude Mbeki collected more than three hundred "
                "signatures on a petition in under a week. She argues that the ferry "
                "should be treated as public transport rather than a private business, "
                "and that the town council should help to fund the evening service."
            )),
            ("p", (
                "The company has offered a compromise of sorts. Passengers who book by "
                "four in the afternoon will be able to request a late crossing on "
                "weekdays, provided at least six people sign up. Critics say the booking "
                "system is unworkable for people whose shifts change at short notice, and "
                "that six passengers is a high bar on a wet Tuesday in January. Town "
                "council transport lead Hollis Frame said he would ask officers to look at "
                "whether a small subsidy could keep one later boat running. He warned, "
                "however, that any money would have to come from a budget already "
                "stretched by the library repairs."
            )),
            ("p", (
                "A public meeting about the changes will be held at the East Tamsel "
                "village hall on the evening of September twenty-third. The ferry company "
                "has agreed to send a representative. Campaigners have asked those who "
                "attend to bring examples of journeys that will no longer be possible "
                "under the new timetable."
            )),
        ],
    },
    "observatory-night": {
        "section": "culture",
        "headline": "Stargazers pack Beacon Hill for the observatory's first open night",
        "dek": (
            "The restored dome welcomed the public for the first time in a generation, "
            "with Saturn as the star attraction."
        ),
        "keywords": "observatory, astronomy, Beacon Hill, Saturn, open night, light pollution",
        "author": "Ada Winslow",
        "date": ("2024-10-07", "7 October 2024"),
        "body": [
            ("p", (
                "The little observatory on Beacon Hill opened its doors to the public on "
                "Saturday for the first time in twenty-six years, and the queue to look "
                "through its telescope wound down the gravel path well past midnight. The "
                "dome was built in 1934 by a retired sea captain who wanted to teach "
                "navigation by the stars. It fell into disuse in the 1990s after the "
                "rotating roof seized and the lens was removed for safekeeping. A group of "
                "amateur astronomers spent four winters restoring it, regreasing the "
                "track, rebuilding the wooden shutters and refitting the original "
                "<strong>brass refractor</strong>. Around three hundred people came up the "
                "hill, many carrying folding chairs and flasks of cocoa. The sky "
                "cooperated, clearing shortly after sunset and staying clear until the "
                "early hours."
            )),
            ("h2", "Rings, craters and a passing satellite"),
            ("p", (
                "Saturn was the highlight of the evening. Through the refractor, its rings "
                "appeared as a thin, bright ellipse tilted almost edge-on, and sharp-eyed "
                "visitors could pick out the moon Titan as a faint dot beside the planet. "
                "Volunteers set up smaller telescopes on the lawn, pointed at the Moon, the "
                "Andromeda galaxy and a double star in Cygnus whose two components glow "
                "gold and blue. Eleven-year-old Zo\u00eb Marchetti said the craters on the "
                "Moon looked \u201clike someone had been throwing stones into wet "
                "sand.\u201d Shortly before ten, a cheer went up when a bright satellite "
                "drifted silently overhead. The society's treasurer, Bernard Quayle, spent "
                "most of the night explaining why stars twinkle but planets mostly do not."
            )),
            ("p", (
                "The Beacon Hill Astronomical Society plans to hold open nights on the "
                "first Saturday of each month through the winter, weather permitting. "
                "Entry is free, although donations help cover insurance and the "
                "electricity for the dome motor. The society has asked visitors to use red "
                "torches on the path, because white light spoils the eyes' adaptation to "
                "the dark for twenty minutes or more. It is also pressing the council to "
                "dim or shield the new street lights on Beacon Road, which throw a glow "
                "across the northern sky. Quayle said the best moment of the night was "
                "hearing people who had lived in Wrenfield all their lives say they had "
                "never seen the Milky Way."
            )),
        ],
    },
    "mill-makerspace": {
        "section": "culture",
        "headline": "Old wool mill reopens with lathes, looms and laser cutters",
        "dek": (
            "A co-operative of craftspeople has turned two floors of Colley's Mill into "
            "shared workshops open to anyone with a membership card."
        ),
        "keywords": "makerspace, Colley's Mill, co-operative, workshop, weaving, loom",
        "author": "Tobias Greer",
        "date": ("2024-06-03", "3 June 2024"),
        "body": [
            ("p", (
                "Two floors of the former Colley's Mill, empty since the wool trade left "
                "the valley, have reopened as a shared workshop where members can use "
                "woodworking lathes, sewing machines, 3D printers and a laser cutter. The "
                "<strong>Millhouse Makerspace</strong> is run as a co-operative by fourteen "
                "founding members, including a furniture restorer, a jeweller, two "
                "software developers and a retired textile engineer. Membership costs "
                "thirty dollars a month, or ten for students and people receiving "
                "benefits. Members must complete a short safety induction before using "
                "each machine, and the more dangerous tools can only be booked when a "
                "trained supervisor is on site. At the opening on Saturday, children "
                "queued to engrave their names on wooden keyrings while their parents "
                "inspected a restored nineteenth-century handloom."
            )),
            ("h2", "A loom in the old carding room"),
            ("p", (
                "The loom is a point of pride. It was discovered in pieces in a barn near "
                "Ashcombe, and the textile engineer, Margit S\u00f8rensen, spent eighteen "
                "months fitting it with replacement shuttles and a new leather drive belt. "
                "She now teaches a weekly weaving class on the same floor where, a century "
                "ago, dozens of workers combed raw fleece into fibre. The building's "
                "cast-iron columns and arched windows have been left exposed, and a faint "
                "smell of lanolin still rises from the floorboards on warm days. The "
                "co-operative raised the money for its lease through a community share "
                "offer and a small heritage grant. Rent is kept low by an agreement with "
                "the owner, who is converting the rest of the mill into flats."
            )),
            ("p", (
                "The founders hope the space will help people start small businesses "
                "without having to buy expensive equipment. One member already sells "
                "hand-turned bowls online, and another is prototyping a bicycle light that "
                "clips onto a helmet. Evening sessions for teenagers on Thursdays are led "
                "by volunteers and include a basic electronics course. S\u00f8rensen said "
                "she had been surprised by how many older residents had come in to share "
                "memories of working in the mill. \u201cSome of them still know how to "
                "set up a loom better than I do,\u201d she said. The makerspace is open "
                "daily from ten until nine, and non-members can book a free taster "
                "session on the first Sunday of each month."
            )),
        ],
    },
}

# Lightly edited copies, published at their own URL (slug -> edit recipe).
# "replace": (old, new) pairs, each must occur exactly once in the body;
# "drop_sentences"/"add_sentences": whole sentences removed / (after, new) added;
# "note": paragraph appended inside the article; "byline_suffix" is appended
# to the byline line.
EDITS = {
    "orchard-frost": {
        "slug": "orchard-frost-corrected",
        "byline_suffix": " \u00b7 Corrected 24 April 2024",
        "replace": [
            ("fell to minus three degrees", "fell to minus four degrees"),
            ("<b>forty acres</b>", "<b>fourteen acres</b>"),
            ("Simon Achterberg", "Simon Achterburg"),
        ],
        "drop_sentences": [],
        "add_sentences": [],
        "note": (
            "<em>Correction, 24 April 2024:</em> An earlier version of this article "
            "said that Grace Hallett protected forty acres with sprinklers; the correct "
            "figure is fourteen acres. It also gave the lowest temperature at the "
            "Hallett weather station as minus three degrees rather than minus four, and "
            "misspelled the surname of Simon Achterburg."
        ),
    },
    "ferry-timetable": {
        "slug": "ferry-timetable-update",
        "byline_suffix": " \u00b7 Updated 12 September 2024",
        "replace": [
            ("more than three hundred signatures on a petition in under a week",
             "more than four hundred signatures on a petition in ten days"),
            ("that six passengers is a high bar on a wet Tuesday",
             "that even four passengers is a high bar on a wet weeknight"),
        ],
        "drop_sentences": [
            "The ferry has operated in some form since at least 1790, when it was a "
            "rowing boat hauled along a rope.",
        ],
        "add_sentences": [
            ("provided at least six people sign up.",
             "On Wednesday the company said it would lower that minimum to four "
             "passengers for a trial period lasting until Christmas."),
        ],
        "note": None,
    },
}

PARTNER_NAME = "Tamsel Valley News Network"

# Syndicated copies on the partner network (slug -> recipe).
# "trim_first_paragraph": keep only this many leading sentences of paragraph 1.
# "drop_paragraphs": indexes into the body list (paragraphs and headings).
SYNDICATED = {
    "orchard-frost": {
        "headline": "Apple growers count the cost after an overnight freeze near Wrenfield",
        "trim_first_paragraph": 2,
        "drop_paragraphs": [],
    },
    "ferry-timetable": {
        "headline": "Evening ferry across the Tamsel to be scaled back this winter",
        "trim_first_paragraph": None,
        "drop_paragraphs": [4],
    },
}

MIRROR_NAME = "Valley Digital Archive"

SECTIONS = {
    "town-hall": {
        "title": "Town Hall",
        "intro": (
            "Council meetings, budgets, planning decisions and the public services that "
            "keep Wrenfield running. Our Town Hall desk attends every full council "
            "session and most committee hearings, and we publish the agenda papers we "
            "receive so that readers can check our reporting against the source. If a "
            "decision affects your street and nobody can tell you who made it, write to "
            "the desk and we will try to find out."
        ),
    },
    "business": {
        "title": "Business",
        "intro": (
            "Shops, farms, workshops and the people who run them. Wrenfield's economy "
            "still leans on the land and the river, but the high street has changed "
            "more in the past decade than in the fifty years before. This section "
            "follows openings and closures, harvests and prices, and the small firms "
            "that rarely make the regional papers. Tips about new ventures are always "
            "welcome at the front counter."
        ),
    },
    "schools": {
        "title": "Schools",
        "intro": (
            "Classrooms, clubs, exam results and the long arguments about school "
            "buses. We cover the primary school on Orchard Road, Wrenfield Middle "
            "School and Wrenfield High, along with the adult education courses held at "
            "the community centre. Pupils who want to write for the paper can join our "
            "junior reporters scheme, which meets in the newsroom every other Friday "
            "afternoon during term."
        ),
    },
    "outdoors": {
        "title": "Outdoors",
        "intro": (
            "The river, the hills, the footpaths and the creatures that share them with "
            "us. Here you will find walking routes, wildlife sightings, flood warnings "
            "and the work of the volunteer groups that look after the countryside "
            "around town. Readers' photographs of birds, badgers and unusual weather are "
            "printed every Thursday, so keep your camera handy."
        ),
    },
    "culture": {
        "title": "Culture",
        "intro": (
            "Music, theatre, crafts, science and every other way Wrenfield keeps itself "
            "busy after work. From the brass band's rehearsals in the drill hall to "
            "the quilting circle at the chapel, this section records what people make "
            "and share. Event organisers can send listings to the newsroom by Tuesday "
            "noon for inclusion in the weekend pages."
        ),
    },
}

HOME_INTRO = (
    "Good morning, Wrenfield. This is the online edition of the town's weekly "
    "newspaper, with the stories from our latest print issues, the corrections we "
    "owe our readers and a few pieces shared with our friends across the valley."
)

ABOUT_TEXT = [
    (
        "The Wrenfield Courier is a weekly newspaper serving Wrenfield, East Tamsel and "
        "the farms of the south slopes. It is written by a newsroom of four reporters, "
        "one photographer and a rotating team of volunteer contributors, and it is "
        "printed on Wednesday nights on a press that is older than everybody who "
        "operates it."
    ),
    (
        "<strong>This is a fictional newspaper.</strong> The town, its people and every "
        "story on this site were invented as sample material for a software project "
        "that detects duplicate and near-duplicate web pages. The site deliberately "
        "contains the kinds of copies a web crawler meets in practice: tracking links, "
        "session identifiers, print versions, mirrors, corrected articles and "
        "syndicated stories. All of the text is original and dedicated to the public "
        "domain."
    ),
    (
        "Letters to the editor should be brief, signed and sent to the newsroom on "
        "Station Road. We publish corrections in the same section as the original "
        "story and keep the corrected version online beside the first one, so that "
        "readers can see exactly what changed."
    ),
]

ARCHIVE_INTRO = (
    "Every story published on this site, newest first. Links on this page come from "
    "our older content system, which still adds its own visit identifier to some "
    "addresses; the pages behind them are the same articles you will find in the "
    "sections."
)

NEWSLETTER_TEXT = [
    (
        "The <b>Wrenfield Weekly</b> email arrives every Friday morning with the five "
        "stories our editors think you should not miss, the weekend weather and the "
        "week's planning applications. It is free, carries no advertising and can be "
        "cancelled with a single click."
    ),
    (
        "To subscribe, send an email with the word JOIN to the newsroom, or leave your "
        "address at the front counter of the Station Road office. Below is a copy of "
        "last week's edition as it was sent, links and all."
    ),
]

SEARCH_INTRO = (
    "Search the Courier's online archive by keyword. The terms below are the ones our "
    "readers looked up most often this month; each opens a page of matching stories "
    "with a short extract showing where the word appears."
)

MIRROR_ABOUT = (
    "The Valley Digital Archive keeps preservation copies of local journalism from the "
    "Tamsel valley, so that stories remain readable if a newspaper's own website "
    "changes or disappears. Pages are copied with the publisher's permission and "
    "shown here exactly as they were published. Advertising on the archive pays for "
    "storage and is chosen by the archive, not by the original publisher."
)

#: an appeal the archive marks as not for search indexes (googleoff/googleon, as Google Search Appliance
#: sites do): prose beside the article that a reader of the page's main text would otherwise take in, so the
#: mirror copies stay exact copies only when the marked part is left out (dedup.indexmarks)
MIRROR_APPEAL = (
    "The Valley Digital Archive is run by volunteers and keeps every page it preserves online, free "
    "to read and without a paywall. If this copy helped you, please consider a small donation towards "
    "storage and the scanning of older editions, which we add a few hundred pages at a time."
)

MIRROR_AD = (
    "Tamsel Valley Hardware \u2014 seed potatoes, garden twine, paraffin and bird "
    "feeders. Open every day except Sunday, opposite the station."
)

PARTNER_ABOUT = (
    "The Tamsel Valley News Network shares local reporting between eleven community "
    "papers along the river. Member titles republish each other's stories with "
    "credit, sometimes shortened to fit the page, so that readers in one town can "
    "follow what happens in the next. The stories below come from our partner, The "
    "Wrenfield Courier."
)

# Search result pages: one template, one title, the same number of links each.
SEARCH_TERMS = ["council", "volunteers", "students", "winter", "residents"]
