// The pictures the main view can draw attention as (viewer-main.js shows one at a time, and a
// button for each): a module with `label` and a class made as new Picture(slot, ctx) with
// draw(s, trace, layout, size) and clear(). Adding a picture: its module, one line here.

import * as map from "./picture-map.js";
import * as lines from "./lines.js";

export const PICTURES = {
  map: { label: map.label, Picture: map.MapPicture },
  lines: { label: lines.label, Picture: lines.LinePicture },
};
