# web/web.mk — the WebAssembly build (make web runs web/build.sh, which runs
# this makefile after fetching the sources of utf8proc and PCRE2).
#
# The engine's own files, built by Emscripten's em++: every .cpp of the top
# level, cpu/ and gguf/, but not serve/ (a page cannot listen on a port),
# the x86 SIMD files or the GPU code (cpu/arm/kernels_neon.cpp and
# cuda/net_cuda.cpp compile to their stand-ins off ARM and without CUDA):
# wasm32 gets the portable scalar
# kernel set, which computes the same bits as AVX2, AVX-512 and NEON.
# One thread (compat/omp.h), as the page must work without the cross-origin
# isolation headers that WebAssembly threads need.
EMXX ?= em++
EMCC ?= emcc
OBJ  := build/web-obj
OUT  := build/web
LIBS := $(OBJ)/src
UTF8PROC := $(wildcard $(LIBS)/utf8proc-*/utf8proc.c)
PCRE2    := $(firstword $(wildcard $(LIBS)/pcre2-*/src))

# -fexceptions: Emscripten 3.1.6 compiles C++ without exceptions unless
# told, and every error of the engine (fail()) is one. The header-only
# libraries come from $(OBJ)/include: Emscripten does not search /usr/include.
CXXFLAGS := -std=c++17 -O2 -fexceptions -ffp-contract=off -Wall -Wno-unused-parameter -I. -Iweb/include -I$(OBJ)/include \
            -DLANTERN_NO_OPENMP -Icompat -Wno-unknown-pragmas
# PCRE2 as Debian configures it (Unicode, 8-bit code units, the default
# limits of config.h.generic), without the JIT: a page cannot make its own
# machine code, so matching is interpreted.
PCRE2_FLAGS := -O2 -DHAVE_CONFIG_H -DPCRE2_CODE_UNIT_WIDTH=8 -DSUPPORT_UNICODE -DSUPPORT_PCRE2_8 -DPCRE2_STATIC \
               -DHAVE_MEMMOVE -DHAVE_STRERROR -I$(OBJ)/pcre2 -I$(PCRE2)
ENGINE_SRCS := $(filter-out main.cpp,$(wildcard *.cpp cpu/*.cpp gguf/*.cpp lens/*.cpp)) cpu/arm/kernels_neon.cpp cuda/net_cuda.cpp \
               main.cpp web/stubs.cpp
ENGINE_OBJS := $(ENGINE_SRCS:%.cpp=$(OBJ)/%.o)
PCRE2_NAMES := auto_possess chartables compile config context convert dfa_match error extuni find_bracket \
               jit_compile maketables match match_data newline ord2utf pattern_info script_run serialize \
               string_utils study substitute substring tables ucd valid_utf xclass
PCRE2_OBJS  := $(PCRE2_NAMES:%=$(OBJ)/pcre2/pcre2_%.o)
LIB_OBJS    := $(OBJ)/utf8proc.o $(PCRE2_OBJS)

# The module: MODULARIZE, so each command runs in a fresh instance (the
# engine keeps globals: log level, watch filter, kernel set, seed); for a
# page and its Worker only (Node.js's loader would trip over fetch);
# memory grows up to wasm32's 4 GiB, as a model file is copied into it.
LDFLAGS := -O2 -fexceptions -sMODULARIZE=1 -sEXPORT_NAME=createLantern -sENVIRONMENT=web,worker \
           -sALLOW_MEMORY_GROWTH=1 -sINITIAL_MEMORY=64MB -sMAXIMUM_MEMORY=4GB -sTOTAL_STACK=8MB \
           -sEXIT_RUNTIME=1 -sINVOKE_RUN=0 -sFORCE_FILESYSTEM=1 -sEXPORTED_RUNTIME_METHODS=callMain,FS

.PHONY: all
all: $(OUT)/lantern.js

$(OUT)/lantern.js: $(ENGINE_OBJS) $(LIB_OBJS)
	@mkdir -p $(@D)
	@echo "em++ -o $@ ($(words $^) objects)"
	@$(EMXX) $(LDFLAGS) -o $@ $^

-include $(ENGINE_OBJS:.o=.d)
$(OBJ)/%.o: %.cpp $(OBJ)/include/.ready
	@mkdir -p $(@D)
	@echo "em++ $<"
	@$(EMXX) $(CXXFLAGS) -MMD -MP -c -o $@ $<

$(OBJ)/utf8proc.o: $(UTF8PROC)
	@echo "emcc $<"
	@$(EMCC) -O2 -DUTF8PROC_STATIC -c -o $@ $<

$(OBJ)/pcre2/pcre2_%.o: $(PCRE2)/pcre2_%.c $(OBJ)/pcre2/config.h
	@echo "emcc $<"
	@$(EMCC) $(PCRE2_FLAGS) -c -o $@ $<
$(OBJ)/pcre2/pcre2_chartables.o: $(OBJ)/pcre2/pcre2_chartables.c $(OBJ)/pcre2/config.h
	@echo "emcc $<"
	@$(EMCC) $(PCRE2_FLAGS) -c -o $@ $<
$(OBJ)/pcre2/pcre2_chartables.c $(OBJ)/pcre2/pcre2.h: $(OBJ)/pcre2/config.h ;
$(OBJ)/pcre2/config.h: $(PCRE2)/config.h.generic
	@mkdir -p $(@D)
	@cp $(PCRE2)/pcre2.h.generic $(@D)/pcre2.h
	@cp $(PCRE2)/pcre2_chartables.c.dist $(@D)/pcre2_chartables.c
	@cp $< $@

# The headers the engine includes: the two libraries' own, and copies of
# Debian's header-only nlohmann-json and stb.
$(OBJ)/include/.ready: $(OBJ)/pcre2/config.h $(UTF8PROC)
	@mkdir -p $(@D)/stb
	@cp $(OBJ)/pcre2/pcre2.h $(dir $(UTF8PROC))utf8proc.h $(@D)/
	@cp -r /usr/include/nlohmann $(@D)/
	@cp /usr/include/stb/stb_image_write.h $(@D)/stb/
	@touch $@
