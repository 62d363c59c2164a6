# Lantern — build, test and run.
#   make          build ./run (a link to build/run)
#   make run      install what is missing, build, generate text with the default model
#   make test     install what is missing, build, run every test; last line "N passed, N failed"
#   make bench    speed of the tokenizer and of the forward pass on the 0.5B-shaped model

CXX      ?= g++
ARCH     ?= -march=native
CXXFLAGS ?= -O2 -g -std=c++17 -Wall -Wextra -Wno-unused-parameter $(ARCH) -fopenmp
LDLIBS   += -fopenmp -lutf8proc -lpcre2-8 -lpthread -lcpp-httplib
BUILD    := build
.DEFAULT_GOAL := all

# Every top-level .cpp is one part of the engine; run.cpp also holds main().
ENGINE_SRCS := $(filter-out run.cpp,$(wildcard *.cpp))
ENGINE_OBJS := $(ENGINE_SRCS:%.cpp=$(BUILD)/%.o)
TEST_SRCS   := $(wildcard tests/*.cpp)
TEST_OBJS   := $(TEST_SRCS:tests/%.cpp=$(BUILD)/tests/%.o)
HEADERS     := $(wildcard *.h)

# make cuda: the same ./run plus the GPU backend (--device cuda), built in
# build/cuda so CPU and CUDA objects never mix; `make` switches ./run back.
# Needs the CUDA toolkit; the default build never calls nvcc. The CUDA
# runtime is linked statically, so ./run needs only the NVIDIA driver.
CUDA_HOME ?= /usr/local/cuda
NVCC      ?= $(CUDA_HOME)/bin/nvcc
CUDA_ARCH ?= -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90
.PHONY: cuda
cuda:
	@$(MAKE) --no-print-directory BUILD=$(BUILD)/cuda LANTERN_CUDA=1 $(BUILD)/cuda/run $(BUILD)/cuda/unit_tests
	@ln -sf $(BUILD)/cuda/run run
ifdef LANTERN_CUDA
CXXFLAGS    += -DLANTERN_CUDA -I$(CUDA_HOME)/include
ENGINE_OBJS += $(BUILD)/kernels_cuda.o
LDLIBS      += -L$(CUDA_HOME)/lib64 -lcudart_static -ldl -lrt
$(BUILD)/kernels_cuda.o: kernels_cuda.cu $(HEADERS) | $(BUILD)
	$(NVCC) -std=c++17 -O2 $(CUDA_ARCH) -Xcompiler -Wall,-Wextra,-Wno-unused-parameter -c -o $@ $<
endif

.PHONY: all deps models run test bench clean
all: $(BUILD)/run $(BUILD)/gen_model
	@ln -sf $(BUILD)/run run

$(BUILD)/run: $(ENGINE_OBJS) $(BUILD)/run.o
	$(CXX) $(CXXFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/%.o: %.cpp $(HEADERS) | $(BUILD)
	$(CXX) $(CXXFLAGS) -c -o $@ $<

# run.cpp without its main(), so tests can call the generation loop directly.
$(BUILD)/run_lib.o: run.cpp $(HEADERS) | $(BUILD)
	$(CXX) $(CXXFLAGS) -DLANTERN_NO_MAIN -c -o $@ $<

$(BUILD)/tests/%.o: tests/%.cpp $(HEADERS) | $(BUILD)
	@mkdir -p $(BUILD)/tests
	$(CXX) $(CXXFLAGS) -I. -c -o $@ $<

$(BUILD)/unit_tests: $(ENGINE_OBJS) $(BUILD)/run_lib.o $(TEST_OBJS)
	$(CXX) $(CXXFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/gen_model: tools/gen_model.cpp common.h $(BUILD)/common.o | $(BUILD)
	$(CXX) $(CXXFLAGS) -I. -o $@ tools/gen_model.cpp $(BUILD)/common.o

$(BUILD):
	@mkdir -p $(BUILD)

# Installs missing apt packages and npm modules, fetches the Qwen tokenizer.
deps:
	@bash tools/install_deps.sh

# The generated test models (random weights, real tokenizer).
models: $(BUILD)/gen_model
	@bash tools/make_models.sh

# The demo: the default model (trained/kjv) answers a prompt through the
# chat template, sampling with the settings of its generation_config.json
# (greedy decoding makes this small model loop: see chapter 14).
DEMO_PROMPT ?= Tell me about the flood
run: deps
	@$(MAKE) --no-print-directory all models
	./run "$(DEMO_PROMPT)" --gen-config -n 64

test: deps
	@$(MAKE) --no-print-directory all $(BUILD)/unit_tests
	@$(MAKE) --no-print-directory models
	@bash tests/run_all.sh

# Speed (book/11-performance.md): the forward pass on the 0.5B-shaped model
# (generated once: ~1 GB of random bf16 weights) in four weight types, then
# the tokenizer.
bench: all
	@[ -f models/qwen2.5-0.5b/model.safetensors ] || $(BUILD)/gen_model --preset qwen2.5-0.5b --out models/qwen2.5-0.5b
	./run bench models/qwen2.5-0.5b --quant bf16,q8_0,f16,f32
	@if [ -f tools/bench_tokenizer.sh ]; then bash tools/bench_tokenizer.sh; fi

clean:
	rm -rf $(BUILD) run

# The book: `make book` renders book/*.md to HTML in build/book/ (pandoc);
# `make book-check` runs its commands and compares its outputs (also part of
# `make test`, as tests/check_book.sh).
.PHONY: book book-check
book:
	@/usr/bin/python3 tools/book_check.py --render $(BUILD)/book

book-check: all models $(BUILD)/unit_tests
	@/usr/bin/python3 tools/book_check.py

# The book's figures (book/img/fig-*.svg), drawn by tools/figures.py from the
# engine's own numbers; tests/check_figures.sh checks the committed ones are current.
.PHONY: figures
figures: all
	@/usr/bin/python3 tools/figures.py

# The trace report in a real browser (headless Chromium): its script must run
# without a JavaScript error; leaves a screenshot in build/report.png. Also
# part of `make test`, as tests/check_report.sh.
.PHONY: report-check
report-check: all models
	@bash tests/check_report.sh

# Exercises (chapters/README.md): `make exercise EX=rmsnorm` builds the
# student's chapters/rmsnorm/stub.cpp into the engine in place of the real
# function and runs its checker; SOLUTION=1 puts the engine's own function
# in the stub's place (it must pass). Without EX: the list.
.PHONY: exercise
exercise: all $(BUILD)/run_lib.o
	@$(MAKE) --no-print-directory models
	@CXX="$(CXX)" CXXFLAGS="$(CXXFLAGS)" LDLIBS="$(LDLIBS)" OBJS="$(ENGINE_OBJS) $(BUILD)/run_lib.o" \
	    bash chapters/build_exercise.sh "$(EX)" $(if $(SOLUTION),--solution)

# The default model (book/14-weights.md): corpus -> tokenizer -> training -> export
# into trained/kjv, with TRAINING.md and the loss curve. MINUTES is the training
# budget in CPU minutes of one thread (`make train MINUTES=5` for a quick run).
MINUTES ?= 50
.PHONY: train
train: deps
	bash tools/make_corpus.sh $(BUILD)/kjv/corpus.txt
	node tools/train_tokenizer.js train $(BUILD)/kjv/corpus.txt $(BUILD)/kjv 4096
	nice /usr/bin/python3 tools/train.py --corpus $(BUILD)/kjv/corpus.txt \
	    --tokenizer $(BUILD)/kjv/tokenizer.json --work $(BUILD)/kjv --out trained/kjv --minutes $(MINUTES)
