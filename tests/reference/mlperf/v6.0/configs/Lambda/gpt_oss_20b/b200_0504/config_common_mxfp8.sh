export FP8=True
export FP8_RECIPE=mxfp8
export FP8_HYBRID=False
# DM: Try setting this now
# export FP8_PARAM_GATHER=False
export FP8_PARAM_GATHER=True
# DM: Must also be set to True for the above
export REUSE_GRAD_BUF_FOR_MXFP8_PARAM_AG=True
