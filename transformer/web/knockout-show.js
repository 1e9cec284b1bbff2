// js= of the step after /knockout (panels/analysis.py): hand the result to the panel, which draws it.
(translation, data) => { if (window.axAnalysis) window.axAnalysis.showKnockout(data); }
