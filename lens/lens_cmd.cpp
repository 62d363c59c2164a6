// lens_cmd.cpp — `./run lens MODEL "prompt"`: the logit lens at every depth,
// the direct logit attribution of the followed token and, with --rank-heads,
// every head and MLP switched off in turn; as tables or as one JSON object.
// The arithmetic is lens.cpp's; this file loads, runs and prints.
#include <cstdio>
#include "cli.h"
#include "lens/lens.h"

// A token's text for the table: its bytes, or "#id" for a row of the LM head
// past the tokenizer's vocabulary (models pad their embedding rows).
static std::string token_text(const Tokenizer& tok, int id) {
    std::string b = id < tokenizer_vocab_size(tok) ? tokenizer_decode(tok, {id}) : "";
    return b.empty() ? "#" + std::to_string(id) : b;
}
static std::string depth_name(int d) { return d == 0 ? "embed" : strprintf("layer %d", d - 1); }
static std::string part_name(int layer, int head) {
    return head < 0 ? strprintf("%d.mlp", layer) : strprintf("%d.%d", layer, head);
}

// --target TEXT: the one token it encodes to.
static int target_token(const Tokenizer& tok, const std::string& text) {
    std::vector<int> ids = tokenizer_encode(tok, text);
    if (ids.size() != 1) {
        std::string pieces;
        for (int id : ids) pieces += (pieces.empty() ? "" : ", ") + json_string(token_text(tok, id));
        fail("--target %s is %zu tokens (%s), not one token of this model's vocabulary", json_string(text).c_str(),
             ids.size(), pieces.c_str());
    }
    return ids[0];
}

int cmd_lens(int argc, char** argv) {
    Options o = parse_command("lens", argc, argv);
    if (o.positional.empty()) fail("lens: no prompt given (usage: ./run lens MODEL \"prompt\")");
    Engine e;
    engine_load(e, o.engine);
    const Model& m = e.model;
    const Config& c = m.cfg;
    // The text the generate command would prefill: the chat template unless --raw.
    std::string text = o.positional[0];
    if (!o.raw) text = apply_chat_template({{"user", text}}, true, ChatFormat{c.arch->chat, true});
    std::vector<int> ids = tokenizer_encode(e.tok, text);
    int T = (int)ids.size(), V = c.vocab, L = c.n_layers;
    if (T == 0) fail("lens: the prompt encodes to no tokens");
    if (!o.lens_all && o.lens_pos >= T)
        fail("--pos %d: the prompt has %d token%s (positions 0 to %d)", o.lens_pos, T, T == 1 ? "" : "s", T - 1);
    if (o.rank_heads && o.lens_all) fail("--rank-heads: choose one position (--pos N, or the last by default), not all");
    int fixed_target = o.target.empty() ? -1 : target_token(e.tok, o.target);

    LensCapture cap;
    std::vector<float> logits = lens_forward(e.net, cap, ids);  // the model's own, every position
    int first = o.lens_all ? 0 : o.lens_pos < 0 ? T - 1 : o.lens_pos, last = o.lens_all ? T - 1 : first;
    std::vector<int> positions;
    for (int p = first; p <= last; p++) positions.push_back(p);
    // Each chosen position's target: --target, else the model's own top token there.
    std::vector<int> targets;
    for (int p : positions) targets.push_back(fixed_target >= 0 ? fixed_target : sample_argmax(&logits[(size_t)p * V], V));
    // The lens, one depth at a time over every position: readings[d][i] for positions[i].
    std::vector<std::vector<LensReading>> readings(L + 1);
    std::vector<float> depth_logits((size_t)T * V);
    for (int d = 0; d <= L; d++) {
        lens_layer(m, cap, d, depth_logits.data());
        for (size_t i = 0; i < positions.size(); i++)
            readings[d].push_back(lens_read(&depth_logits[(size_t)positions[i] * V], V, o.top, targets[i]));
    }
    std::vector<AblationEffect> effects;
    if (o.rank_heads) effects = ablation_effects(e.net, ids, positions[0], targets[0]);
    std::string ablated;
    for (auto& lh : e.net.ablate.heads) ablated += (ablated.empty() ? "" : ", ") + part_name(lh.first, lh.second);
    for (int l : e.net.ablate.mlps) ablated += (ablated.empty() ? "" : ", ") + part_name(l, -1);

    if (o.json) {
        printf("{\"model\": %s, \"prompt_ids\": [", json_string(m.dir).c_str());
        for (int i = 0; i < T; i++) printf("%s%d", i ? ", " : "", ids[i]);
        printf("], \"ablated\": %s, \"positions\": [", json_string(ablated).c_str());
        for (size_t i = 0; i < positions.size(); i++) {
            int p = positions[i], v = targets[i];
            Attribution a = attribute(m, cap, p, v);
            printf("%s{\"pos\": %d, \"token\": %d, \"text\": %s, \"target\": {\"id\": %d, \"text\": %s, \"logit\": %.6g}, \"lens\": [",
                   i ? ", " : "", p, ids[p], json_string(token_text(e.tok, ids[p])).c_str(), v,
                   json_string(token_text(e.tok, v)).c_str(), logits[(size_t)p * V + v]);
            for (int d = 0; d <= L; d++) {
                const LensReading& r = readings[d][i];
                printf("%s{\"depth\": %d, \"name\": %s, \"top\": [", d ? ", " : "", d, json_string(depth_name(d)).c_str());
                for (size_t k = 0; k < r.top.size(); k++)
                    printf("%s{\"id\": %d, \"text\": %s, \"prob\": %.6g}", k ? ", " : "", r.top[k],
                           json_string(token_text(e.tok, r.top[k])).c_str(), r.top_prob[k]);
                printf("], \"target_prob\": %.6g, \"target_rank\": %d}", r.target_prob, r.target_rank);
            }
            printf("], \"attribution\": {\"scale\": %.6g, \"embed\": %.6g, \"layers\": [", a.scale, a.embed);
            for (int l = 0; l < L; l++) {
                printf("%s{\"attn\": %.6g, \"heads\": [", l ? ", " : "", a.attn[l]);
                for (int h = 0; h < c.n_heads; h++) printf("%s%.6g", h ? ", " : "", a.heads[l][h]);
                printf("], \"mlp\": %.6g}", a.mlp[l]);
            }
            printf("], \"total\": %.6g}}", a.total);
        }
        printf("]");
        if (o.rank_heads) {
            printf(", \"ablation\": [");
            for (size_t i = 0; i < effects.size(); i++)
                printf("%s{\"part\": \"%s\", \"layer\": %d, \"head\": %d, \"logprob\": %.6g, \"delta\": %.6g}", i ? ", " : "",
                       part_name(effects[i].layer, effects[i].head).c_str(), effects[i].layer, effects[i].head,
                       effects[i].logprob, effects[i].delta);
            printf("]");
        }
        printf("}\n");
        return 0;
    }

    printf("prompt: %d tokens (%s)%s\n", T, o.raw ? "--raw: no chat template" : "the chat template",
           ablated.empty() ? "" : (", ablated: " + ablated).c_str());
    for (size_t i = 0; i < positions.size(); i++) {
        int p = positions[i], v = targets[i];
        std::string vt = json_string(token_text(e.tok, v));
        printf("\nposition %d %s -> %s (%s, logit %.4f)\n", p, json_string(token_text(e.tok, ids[p])).c_str(), vt.c_str(),
               fixed_target >= 0 ? "--target" : "the model's top token", logits[(size_t)p * V + v]);
        printf("  %-9s %-10s %-6s top-%d (probability)\n", "depth", "p(target)", "rank", o.top);
        for (int d = 0; d <= L; d++) {
            const LensReading& r = readings[d][i];
            std::string tops;
            for (size_t k = 0; k < r.top.size(); k++)
                tops += strprintf("%s%s %.3f", k ? "  " : "", json_string(token_text(e.tok, r.top[k])).c_str(), r.top_prob[k]);
            printf("  %-9s %-10.4f %-6d %s\n", depth_name(d).c_str(), r.target_prob, r.target_rank, tops.c_str());
        }
        Attribution a = attribute(m, cap, p, v);
        printf("  direct logit attribution of %s (final norm scale %.5g, frozen):\n", vt.c_str(), a.scale);
        printf("    %-14s %+9.4f\n", "embedding", a.embed);
        for (int l = 0; l < L; l++) {
            std::string heads;
            for (int h = 0; h < c.n_heads; h++) heads += strprintf(" %+.3f", a.heads[l][h]);
            printf("    %-14s %+9.4f   heads:%s\n", strprintf("layer %d attn", l).c_str(), a.attn[l], heads.c_str());
            printf("    %-14s %+9.4f\n", strprintf("layer %d mlp", l).c_str(), a.mlp[l]);
        }
        printf("    %-14s %+9.4f   (the logit %.4f; difference %.2g)\n", "sum", a.total, logits[(size_t)p * V + v],
               a.total - logits[(size_t)p * V + v]);
    }
    if (o.rank_heads) {
        int p = positions[0];
        printf("\nablation, one part at a time: change in log p(%s) at position %d\n",
               json_string(token_text(e.tok, targets[0])).c_str(), p);
        for (const AblationEffect& x : effects)
            printf("  %-7s %+9.4f   (log p %.4f)\n", part_name(x.layer, x.head).c_str(), x.delta, x.logprob);
    }
    return 0;
}
