// A tiled solution of chapters/tiled-matmul: rows x tokens x columns in
// tiles, each output's double sum carried across the column tiles, so the
// additions are matmul_plain's, in its order. tests/check_exercises.sh
// checks that the checker passes it (the engine's untiled matmul_plain is
// the SOLUTION=1 reference; this one shows that tiling keeps the bits).
#include <algorithm>
#include <vector>
#include "kernels.h"

void matmul_plain(float* out, const float* x, const Mat& W, const float* bias, int T) {
    const int RT = 16, TT = 4, CT = 256;  // rows, tokens, columns per tile
    std::vector<float> w((size_t)RT * W.cols);
    std::vector<double> sum((size_t)RT * TT);
    for (int r0 = 0; r0 < W.rows; r0 += RT) {
        int nr = std::min(RT, W.rows - r0);
        for (int r = 0; r < nr; r++) mat_row_to_f32(W, r0 + r, &w[(size_t)r * W.cols]);
        for (int t0 = 0; t0 < T; t0 += TT) {
            int nt = std::min(TT, T - t0);
            for (int t = 0; t < nt; t++)
                for (int r = 0; r < nr; r++) sum[t * RT + r] = bias ? bias[r0 + r] : 0.0;
            for (int c0 = 0; c0 < W.cols; c0 += CT) {
                int c1 = std::min(c0 + CT, W.cols);
                for (int t = 0; t < nt; t++) {
                    const float* xt = x + (size_t)(t0 + t) * W.cols;
                    for (int r = 0; r < nr; r++) {
                        const float* wr = &w[(size_t)r * W.cols];
                        double s = sum[t * RT + r];  // carry on where the last column tile stopped
                        for (int c = c0; c < c1; c++) s += (double)wr[c] * xt[c];
                        sum[t * RT + r] = s;
                    }
                }
            }
            for (int t = 0; t < nt; t++)
                for (int r = 0; r < nr; r++) out[(size_t)(t0 + t) * W.rows + r0 + r] = (float)sum[t * RT + r];
        }
    }
}
