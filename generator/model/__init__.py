"""The model: the frozen Spec every renderer reads, and the facts derived from the spec's schemas.

`spec` holds the immutable model; the other modules own what the schemas mean in the forms the outputs need: open
unions and their catch-alls (unions), objects refined by a value (refinements), the JSON-RPC envelopes
(envelopes), the lenient-parsing annotations (lenience), the published shapes of unions (upstream_form), the
public class names of the Python models (class_names), and naming rules for slugs and identifiers (naming). The
checks build the model with these, and the renderers read it; nothing here knows of either.
"""
