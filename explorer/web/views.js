// The explorer's views, by the name a page host asks for (explorer/blocks.py gives each Gradio
// block its view). A view is a module with mount(hostElement, { store, server }) that draws
// from the one store (store.js) and talks to its Python panel through `server` (gradio.js).
// A view may also export STATE, the store keys it owns (store.js registerState), and LINK,
// what it adds to a shared link (url.js registerLink); both are registered here, before the
// page makes its store. Adding a view: its module here, one line below, and its panel in
// explorer/panels/.

import * as viewer from "./viewer.js";
import * as hint from "./hint.js";
import * as whatif from "./whatif.js";
import * as analysis from "./analysis.js";
import * as beam from "./beam-tree.js";
import * as epochs from "./epochs.js";
import * as tour from "./tour.js"; // no panel: the guided tour reads the store only
import * as pairs from "./pairs.js";
import * as arithmetic from "./arithmetic.js";
import * as attribution from "./attribution.js";
import * as sources from "./sources.js";
import * as glance from "./glance.js";
import * as moved from "./moved.js";
import * as models from "./models.js"; // no panel: the switch is links between the models' pages
// the course: its data is the checkpoint's lessons, and it asks the page to open their sentences
import * as lessons from "./lessons.js";
// a class: a teacher's questions on the step on screen, the students' answers (explorer/class_api.py)
import * as classroom from "./classroom.js";
// no drawing: the logit lens of a large vocabulary, asked for when it is wanted (explorer/panels/lens.py)
import * as lens from "./lens.js";
import * as value_zeroing from "./value-zeroing.js";
import { registerState } from "./store.js";
import { registerLink } from "./url.js";

export const VIEWS = { viewer, hint, whatif, analysis, beam, epochs, pairs, arithmetic, attribution, sources, glance,
  moved, tour, models, lessons, classroom, lens, value_zeroing };

for (const [name, view] of Object.entries(VIEWS)) {
  if (view.STATE) registerState(name, view.STATE);
  if (view.LINK) registerLink(name, view.LINK);
}
