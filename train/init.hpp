#pragma once
// Initialisations a run may choose on top of the Decoder's own (nn/decoder.hpp), each a change
// the inference engines run unchanged: the weights only differ at step 0.

#include "nn/decoder.hpp"

namespace glass {

/// Sets every block's output projections to zero: the attention's W_O (layers.{i}.attention.wo,
/// (d_model, n_heads * head_dim)) and the feed-forward's down projection (layers.{i}.feed_forward.w2,
/// (d_model, ffn_hidden)). Each block then adds nothing to the residual stream: the model starts
/// as the embedding read by the output head, and the blocks grow from there (modded-nanogpt and
/// nanochat's zero init of the projections). The other weights keep their draws.
void zero_output_projections(Decoder& model);

}  // namespace glass
